// CHECK-STDERR
// EXIT: SIGABRT
// A target region on a device number that does not exist: libomptarget prints
// "Device 99 is not ready." and, offloading being mandatory once devices
// exist, aborts.
#include <stdio.h>

int main(void) {
  int x = 0;
  printf("launching on device 99\n");
  fflush(stdout);
#pragma omp target device(99) map(tofrom : x)
  x = 1;
  printf("not reached: x=%d\n", x);
  return 0;
}
