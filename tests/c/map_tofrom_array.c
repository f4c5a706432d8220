// map(tofrom:) on an array: copied in, modified on the device, copied back.
#include <stdio.h>

#define N 64

int main(void) {
  long a[N];
  for (int i = 0; i < N; i++)
    a[i] = i;
#pragma omp target map(tofrom : a)
  {
    for (int i = 0; i < N; i++)
      a[i] = a[i] * a[i] + 1;
  }
  long sum = 0;
  for (int i = 0; i < N; i++)
    sum += a[i];
  printf("a[0]=%ld a[10]=%ld a[63]=%ld sum=%ld\n", a[0], a[10], a[N - 1], sum);
  return sum == 85408 ? 0 : 1;
}
