// CFLAGS: -fopenmp-version=51
// `requires unified_address`: a device pointer from omp_target_alloc is
// used with is_device_ptr and pointer arithmetic on the host, and
// use_device_ptr hands the region the device address (the OpenMP
// specification's unified_address feature, as programs written for it use it).
#include <omp.h>
#include <stdio.h>
#pragma omp requires unified_address
int main(void) {
  int dev = omp_get_default_device();
  int *p = (int *)omp_target_alloc(10 * sizeof(int), dev);
  if (!p) { printf("alloc failed\n"); return 1; }
  // With unified_address, device pointers can be passed via is_device_ptr
  // and use_device_ptr, and pointer arithmetic on them is valid on the host.
  int *q = p + 5;
#pragma omp target is_device_ptr(p, q)
  {
    for (int i = 0; i < 10; i++) p[i] = i;
    q[0] = 50;
  }
  int host[10];
  omp_target_memcpy(host, p, sizeof host, 0, 0, omp_get_initial_device(), dev);
  int ok = 1;
  for (int i = 0; i < 10; i++) ok &= host[i] == (i == 5 ? 50 : i);
  int *r = NULL;
  int data[4] = {1, 2, 3, 4};
#pragma omp target data map(to : data) use_device_ptr(r)
  {}
#pragma omp target data map(tofrom : data)
  {
    int *dp = data;
#pragma omp target data use_device_ptr(dp)
    {
#pragma omp target is_device_ptr(dp)
      dp[0] = 10;
    }
  }
  printf("%s %d\n", ok ? "ok" : "wrong", data[0]);
  omp_target_free(p, dev);
  return !ok;
}
