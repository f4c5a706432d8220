// map(alloc:) reserves device storage with no transfer in either direction.
// The buffer is filled by one target region and read by a second one while a
// surrounding target data region keeps it alive; the host copy never changes.
#include <stdio.h>

#define N 32

int main(void) {
  int buf[N];
  for (int i = 0; i < N; i++)
    buf[i] = 1000;
  int total = 0;
#pragma omp target data map(alloc : buf)
  {
#pragma omp target map(alloc : buf)
    for (int i = 0; i < N; i++)
      buf[i] = 2 * i;
#pragma omp target map(alloc : buf) map(tofrom : total)
    for (int i = 0; i < N; i++)
      total += buf[i];
  }
  printf("device total=%d host buf[5]=%d\n", total, buf[5]);
  return (total == 992 && buf[5] == 1000) ? 0 : 1;
}
