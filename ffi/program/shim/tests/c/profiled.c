/* A known amount of work for LIBOMPTARGET_PROFILE: 4096 bytes to the
 * device and back around one teams region, one `target update from` of
 * 4096 bytes, one omp_target_alloc/free of 256 bytes. With the argument
 * `exit` it ends with exit(3). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024

int main(int argc, char **argv) {
  float a[N];
  for (int i = 0; i < N; i++)
    a[i] = (float)i;
#pragma omp target data map(tofrom : a) device(0)
  {
#pragma omp target teams distribute parallel for device(0)
    for (int i = 0; i < N; i++)
      a[i] *= 2.0f;
#pragma omp target update from(a) device(0)
  }
  void *block = omp_target_alloc(256, 0);
  omp_target_free(block, 0);
  printf("a[10]=%.0f\n", a[10]);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "exit") == 0)
    exit(3);
  return 0;
}
