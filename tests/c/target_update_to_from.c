// target update to/from moves data between the host and an existing device
// copy, whole arrays and sub-sections.
#include <stdio.h>

int main(void) {
  int a[10];
  for (int i = 0; i < 10; i++)
    a[i] = i;
#pragma omp target data map(to : a)
  {
    for (int i = 0; i < 10; i++)
      a[i] = 100 + i; // host-only change
#pragma omp target update to(a[2 : 3])
#pragma omp target
    for (int i = 0; i < 10; i++)
      a[i] = -a[i];
    // Bring back only the tail.
#pragma omp target update from(a[7 : 3])
    for (int i = 0; i < 10; i++)
      printf("%d%c", a[i], i == 9 ? '\n' : ' ');
#pragma omp target update from(a)
    for (int i = 0; i < 10; i++)
      printf("%d%c", a[i], i == 9 ? '\n' : ' ');
  }
  return (a[2] == -102 && a[1] == -1) ? 0 : 1;
}
