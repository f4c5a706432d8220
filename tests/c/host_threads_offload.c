// Several host threads launch target regions and data mappings concurrently;
// each works on its own slice so the result is independent of scheduling.
#include <omp.h>
#include <stdio.h>

#define T 4
#define N 256

int main(void) {
  static int data[T][N];
  long sums[T] = {0};
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; t++) {
    int *slice = data[t];
    for (int i = 0; i < N; i++)
      slice[i] = t * 1000 + i;
    for (int rep = 0; rep < 5; rep++) {
#pragma omp target enter data map(to : slice[0 : N])
#pragma omp target map(tofrom : slice[0 : N])
      for (int i = 0; i < N; i++)
        slice[i] += 1;
#pragma omp target exit data map(from : slice[0 : N])
    }
    long s = 0;
#pragma omp target map(to : slice[0 : N]) map(tofrom : s)
    for (int i = 0; i < N; i++)
      s += slice[i];
    sums[t] = s;
  }
  int ok = 1;
  for (int t = 0; t < T; t++) {
    long expect = (long)N * (t * 1000 + 5) + (long)N * (N - 1) / 2;
    printf("thread slice %d: sum=%ld\n", t, sums[t]);
    if (sums[t] != expect)
      ok = 0;
  }
  return ok ? 0 : 1;
}
