// declare target functions (including a recursive one and one called through
// a function-local static table) called from target regions.
#include <stdio.h>

#pragma omp declare target
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int square(int x) { return x * x; }
#pragma omp end declare target

int cube(int x);
#pragma omp declare target to(cube)
int cube(int x) { return x * x * x; }

int main(void) {
  int r[3] = {0};
#pragma omp target map(from : r)
  {
    r[0] = fib(15);
    r[1] = square(12);
    r[2] = cube(5);
  }
  printf("fib(15)=%d square(12)=%d cube(5)=%d\n", r[0], r[1], r[2]);
  return (r[0] == 610 && r[1] == 144 && r[2] == 125) ? 0 : 1;
}
