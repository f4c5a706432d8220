// map(to:) copies host data to the device but never back: device-side writes
// must not reach the host.
#include <stdio.h>

int main(void) {
  int a[8];
  for (int i = 0; i < 8; i++)
    a[i] = i + 1;
  int sum = 0;
#pragma omp target map(to : a) map(tofrom : sum)
  {
    for (int i = 0; i < 8; i++) {
      sum += a[i];
      a[i] = -1; // stays on the device
    }
  }
  printf("sum=%d\n", sum);
  int unchanged = 1;
  for (int i = 0; i < 8; i++)
    if (a[i] != i + 1)
      unchanged = 0;
  printf("host array unchanged=%d\n", unchanged);
  return (sum == 36 && unchanged) ? 0 : 1;
}
