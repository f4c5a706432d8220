// defaultmap(tofrom: scalar) turns the implicit firstprivate of scalars into
// a tofrom map, so device writes come back.
#include <stdio.h>

int main(void) {
  int n = 5;
  double d = 1.0;
#pragma omp target defaultmap(tofrom : scalar)
  {
    n += 10;
    d *= 4;
  }
  printf("n=%d d=%g\n", n, d);
  int m = 5;
#pragma omp target
  m += 10; // implicitly firstprivate: lost
  printf("m=%d\n", m);
  return (n == 15 && d == 4.0 && m == 5) ? 0 : 1;
}
