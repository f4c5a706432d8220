/* A plain offload program: a region mapping an array on every device,
 * results checked. Prints `devices=`, `sum=<total>` (want 32640 per
 * device) and `result=ok|FAIL`. */
#include <omp.h>
#include <stdio.h>

#define N 256

int main(void) {
  int a[N];
  for (int i = 0; i < N; i++)
    a[i] = i;
  int devices = omp_get_num_devices();
  printf("devices=%d\n", devices);
  long total = 0;
  int bad = 0;
  for (int d = 0; d < devices; d++) {
    long s = 0;
#pragma omp target device(d) map(to : a[0 : N]) map(tofrom : s)
    for (int i = 0; i < N; i++)
      s += a[i];
    bad |= s != 32640;
    total += s;
  }
  printf("sum=%ld\n", total);
  printf("result=%s\n", bad || devices < 1 ? "FAIL" : "ok");
  return bad;
}
