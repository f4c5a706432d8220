// ENV: OMP_TARGET_OFFLOAD=MANDATORY
// CHECK-STDERR
// EXIT: SIGABRT
// OMP_TARGET_OFFLOAD=MANDATORY and a target data region on a device that does
// not exist: fatal error, abort.
#include <stdio.h>

int main(void) {
  int x = 0;
  printf("start\n");
  fflush(stdout);
#pragma omp target data map(tofrom : x) device(12)
  { x = 1; }
  printf("not reached\n");
  return 0;
}
