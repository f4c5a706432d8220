// target teams distribute parallel for with reductions (+, *, max, min, &&)
// over arrays mapped to the device.
#include <stdio.h>

#define N 1000

int main(void) {
  static int v[N];
  for (int i = 0; i < N; i++)
    v[i] = (i * 37) % 101 - 50;
  long sum = 0;
  int mx = -1000, mn = 1000, all_small = 1;
  double prod = 1.0;
#pragma omp target teams distribute parallel for map(to : v) \
    reduction(+ : sum) reduction(max : mx) reduction(min : mn) \
    reduction(&& : all_small)
  for (int i = 0; i < N; i++) {
    sum += v[i];
    mx = v[i] > mx ? v[i] : mx;
    mn = v[i] < mn ? v[i] : mn;
    all_small = all_small && (v[i] < 60);
  }
#pragma omp target teams distribute parallel for reduction(* : prod)
  for (int i = 1; i <= 20; i++)
    prod *= (i % 2) ? 2.0 : 0.5;
  printf("sum=%ld max=%d min=%d all_small=%d prod=%g\n", sum, mx, mn, all_small,
         prod);
  long expect = 0;
  for (int i = 0; i < N; i++)
    expect += v[i];
  return (sum == expect && mx == 50 && mn == -50 && all_small && prod == 1.0)
             ? 0
             : 1;
}
