// CHECK-STDERR
// EXIT: SIGABRT
// CFLAGS: -fopenmp-version=51
// target exit data with map(present, release:) on unmapped data is an error
// at the end of the data region (abort).
#include <stdio.h>

int main(void) {
  int x = 3;
  printf("before exit data\n");
  fflush(stdout);
#pragma omp target exit data map(present, release : x)
  printf("not reached\n");
  return 0;
}
