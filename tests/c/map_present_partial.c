// CHECK-STDERR
// EXIT: SIGABRT
// CFLAGS: -fopenmp-version=51
// present with a section larger than what is mapped: the data is only partly
// present, which the present modifier also reports as missing (abort).
#include <stdio.h>

int main(void) {
  int a[8] = {0};
#pragma omp target enter data map(to : a[0 : 4])
  printf("mapped first half\n");
  fflush(stdout);
#pragma omp target data map(present, to : a[0 : 8])
  { printf("not reached\n"); }
  return 0;
}
