// Several distinct target regions (separate kernels, different argument
// lists) in one program, called in a loop and from a helper function.
#include <stdio.h>

static int add_on_device(int a, int b) {
  int r = 0;
#pragma omp target map(from : r)
  r = a + b;
  return r;
}

int main(void) {
  int acc[4] = {0, 0, 0, 0};
  double scale = 1.5;
  for (int iter = 0; iter < 5; iter++) {
#pragma omp target map(tofrom : acc)
    for (int i = 0; i < 4; i++)
      acc[i] += i + iter;
#pragma omp target map(tofrom : scale)
    scale *= 2;
  }
  int s = add_on_device(40, 2);
  int t = 0;
#pragma omp target teams distribute parallel for reduction(+ : t)
  for (int i = 0; i < 10; i++)
    t += i;
  printf("acc=%d %d %d %d scale=%g s=%d t=%d\n", acc[0], acc[1], acc[2],
         acc[3], scale, s, t);
  return (acc[3] == 25 && scale == 48 && s == 42 && t == 45) ? 0 : 1;
}
