// CHECK-STDERR
// EXIT: SIGABRT
// CFLAGS: -fopenmp-version=51
// target update with the present motion modifier on unmapped data: libomptarget
// prints "device mapping required by 'present' motion modifier does not exist"
// and aborts.
#include <stdio.h>

int main(void) {
  int x = 3;
  printf("before update\n");
  fflush(stdout);
#pragma omp target update to(present : x)
  printf("not reached\n");
  return 0;
}
