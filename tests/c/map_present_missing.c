// CHECK-STDERR
// EXIT: SIGABRT
// CFLAGS: -fopenmp-version=51
// map(present, ...) of data that is not mapped is a runtime error: libomptarget
// prints "device mapping required by 'present' map type modifier does not
// exist", fails the region and, offloading being mandatory once a device
// exists, aborts (SIGABRT).
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4};
  printf("before target\n");
  fflush(stdout);
#pragma omp target map(present, tofrom : a)
  a[0] = 42;
  printf("not reached: %d\n", a[0]);
  return 0;
}
