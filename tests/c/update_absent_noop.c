// target update without the present modifier on data that is not mapped is
// silently ignored (OpenMP 5.x semantics in libomptarget 14).
#include <stdio.h>

int main(void) {
  int x = 3;
#pragma omp target update to(x)
#pragma omp target update from(x)
  printf("x=%d\n", x);
  return x == 3 ? 0 : 1;
}
