// RELEASES: 19 22
// clang 14 maps has_device_addr's section as data and the region
// faults on LLVM 14's runtime as on ours.
// CFLAGS: -fopenmp-version=51
// A device pointer mapped as OpenMP 5.1/5.2 programs do: associated with
// host data (omp_target_associate_ptr, then update and a region), and
// passed with has_device_addr.
#include <omp.h>
#include <stdio.h>
// OpenMP 5.2: a device pointer obtained from omp_target_alloc passed with
// has_device_addr / is_device_ptr, and omp_target_associate_ptr.
int main(void) {
  int dev = omp_get_default_device();
  int *dptr = (int *)omp_target_alloc(8 * sizeof(int), dev);
  int h[8];
  for (int i = 0; i < 8; i++) h[i] = i;
  omp_target_associate_ptr(h, dptr, sizeof h, 0, dev);
#pragma omp target update to(h)
#pragma omp target map(tofrom : h)
  for (int i = 0; i < 8; i++) h[i] *= 2;
#pragma omp target update from(h)
  int s = 0;
  for (int i = 0; i < 8; i++) s += h[i];
  omp_target_disassociate_ptr(h, dev);
#pragma omp target has_device_addr(dptr[0:8])
  for (int i = 0; i < 8; i++) dptr[i] += 1;
  int back[8];
  omp_target_memcpy(back, dptr, sizeof back, 0, 0, omp_get_initial_device(), dev);
  int s2 = 0;
  for (int i = 0; i < 8; i++) s2 += back[i];
  omp_target_free(dptr, dev);
  printf("%d %d\n", s, s2);
  return !(s == 56 && s2 == 64);
}
