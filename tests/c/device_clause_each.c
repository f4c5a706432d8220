// device(n) on every available device: each device runs the region and keeps
// its own copy of a declare target global.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int per_device = 0;
#pragma omp end declare target

int main(void) {
  int n = omp_get_num_devices();
  printf("devices=%d\n", n);
  for (int d = 0; d < n; d++) {
#pragma omp target device(d) firstprivate(d)
    per_device = 10 * (d + 1);
  }
  int ok = 1;
  for (int d = 0; d < n; d++) {
    int got = -1, initial = -1;
#pragma omp target device(d) map(from : got, initial)
    {
      got = per_device;
      initial = omp_is_initial_device();
    }
    printf("device %d: per_device=%d is_initial=%d\n", d, got, initial);
    if (got != 10 * (d + 1))
      ok = 0;
  }
  // device(initial device) runs on the host.
  int host_run = -1;
  int init = omp_get_initial_device();
#pragma omp target device(init) map(from : host_run)
  host_run = omp_is_initial_device();
  printf("device(initial): is_initial=%d\n", host_run);
  return ok ? 0 : 1;
}
