// Device-query API on the host and inside target regions:
// omp_get_num_devices, omp_get_initial_device, omp_get_default_device,
// omp_is_initial_device, omp_get_device_num.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = omp_get_num_devices();
  int init = omp_get_initial_device();
  printf("num_devices=%d initial_device=%d default_device=%d\n", n, init,
         omp_get_default_device());
  printf("host: is_initial=%d device_num=%d\n", omp_is_initial_device(),
         omp_get_device_num());
  int on_initial = -1, dnum = -1;
#pragma omp target map(from : on_initial, dnum)
  {
    on_initial = omp_is_initial_device();
    dnum = omp_get_device_num();
  }
  printf("target: is_initial=%d device_num=%d\n", on_initial, dnum);
  omp_set_default_device(n > 1 ? 1 : 0);
  printf("default after set=%d\n", omp_get_default_device());
  return 0;
}
