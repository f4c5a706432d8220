// RELEASES: 19 22
// Needs LLVM 15+: LLVM 14 hands the region a NULL pointer for each of
// these (its run crashes on both runtimes).
// Pointers captured implicitly by a target region are zero-length
// sections: a pointer whose data was mapped as a section that does not
// start at it is found by the section's base (OpenMP 5.1 "Pointer
// Initialization for Device Data Environments"); one the table does not
// know (omp_target_alloc's memory, or host memory never mapped) keeps its
// host value.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024
#define FROM 64
#define LENGTH 128

int main(void) {
  int dev = omp_get_default_device();
  float *a = malloc(N * sizeof(float));
  float *b = malloc(N * sizeof(float));
  float *c = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 2 * i;
    c[i] = 0;
  }
#pragma omp target enter data map(to : a[FROM : LENGTH], b[FROM : LENGTH])
#pragma omp target enter data map(alloc : c[FROM : LENGTH])
#pragma omp target
  for (int i = FROM; i < FROM + LENGTH; i++)
    c[i] = a[i] + b[i];
#pragma omp target exit data map(from : c[FROM : LENGTH])
#pragma omp target exit data map(delete : a[FROM : LENGTH], b[FROM : LENGTH])
  int errors = 0;
  for (int i = FROM; i < FROM + LENGTH; i++)
    errors += c[i] != a[i] + b[i];
  printf("sections found by base: errors=%d\n", errors);

  // Device memory the table does not know: the region gets the pointer.
  int *d = omp_target_alloc(sizeof(int), dev);
#pragma omp target
  *d = 7;
  int got = 0;
#pragma omp target map(from : got)
  got = *d;
  omp_target_free(d, dev);
  printf("omp_target_alloc pointer: got=%d\n", got);

  // Host memory never mapped: the host value reaches the region unchanged
  // (not dereferenced there).
  int *unmapped = malloc(sizeof(int));
  uintptr_t expected = (uintptr_t)unmapped;
  int same = -1;
#pragma omp target map(from : same)
  same = (uintptr_t)unmapped == expected;
  printf("unmapped host pointer kept: %d\n", same);
  free(unmapped);
  free(a);
  free(b);
  free(c);
  return errors == 0 && got == 7 && same == 1 ? 0 : 1;
}
