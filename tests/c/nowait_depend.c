// target nowait with depend clauses: a chain of deferred target tasks whose
// order is fixed by dependences; results are checked after taskwait.
#include <stdio.h>

#define N 64

int main(void) {
  int a[N], b[N];
  long total = 0;
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 0;
  }
#pragma omp parallel
#pragma omp single
  {
#pragma omp target enter data map(to : a, b) depend(out : a, b) nowait
#pragma omp target depend(inout : a) nowait
    for (int i = 0; i < N; i++)
      a[i] *= 2;
#pragma omp target depend(in : a) depend(out : b) nowait
    for (int i = 0; i < N; i++)
      b[i] = a[i] + 1;
#pragma omp target map(tofrom : total) depend(in : b) depend(inout : total) \
    nowait
    for (int i = 0; i < N; i++)
      total += b[i];
#pragma omp target exit data map(from : a, b) depend(inout : a, b) nowait
#pragma omp taskwait
  }
  printf("a[63]=%d b[63]=%d total=%ld\n", a[N - 1], b[N - 1], total);
  return (a[N - 1] == 126 && b[N - 1] == 127 && total == 4096) ? 0 : 1;
}
