// CHECK-STDERR
// EXIT: SIGABRT
// Mapping a section that starts inside an existing mapping but extends past
// its end is an error ("explicit extension not allowed"); the data region
// fails and libomptarget aborts.
#include <stdio.h>

int main(void) {
  int a[16] = {0};
#pragma omp target enter data map(to : a[0 : 8])
  printf("mapped a[0:8]\n");
  fflush(stdout);
#pragma omp target enter data map(to : a[4 : 8])
  printf("not reached\n");
  return 0;
}
