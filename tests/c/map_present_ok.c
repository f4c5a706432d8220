// CFLAGS: -fopenmp-version=51
// The present modifier succeeds when the data is already mapped (here by an
// enclosing target enter data), and then behaves like the plain map type.
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4};
#pragma omp target enter data map(to : a)
#pragma omp target map(present, tofrom : a)
  for (int i = 0; i < 4; i++)
    a[i] += 10;
#pragma omp target update from(present : a)
  printf("%d %d %d %d\n", a[0], a[1], a[2], a[3]);
#pragma omp target exit data map(present, release : a)
  return a[3] == 14 ? 0 : 1;
}
