// target data use_device_ptr: inside the region the pointer holds the device
// address, which can be passed to a target region with is_device_ptr and to
// omp_target_memcpy.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 16;
  int dev = omp_get_default_device();
  int *a = malloc(n * sizeof *a);
  for (int i = 0; i < n; i++)
    a[i] = i;
  int *host_a = a;
  int differs = -1, present = -1;
#pragma omp target data map(tofrom : a[0 : n]) use_device_ptr(a)
  {
    differs = (a != host_a);
    present = omp_target_is_present(host_a, dev);
#pragma omp target is_device_ptr(a)
    for (int i = 0; i < n; i++)
      a[i] *= 3;
    int probe = -1;
    omp_target_memcpy(&probe, a, sizeof probe, 0, 5 * sizeof(int),
                      omp_get_initial_device(), dev);
    printf("probe via device ptr=%d\n", probe);
  }
  printf("device ptr differs from host ptr=%d present=%d a[15]=%d\n", differs,
         present, host_a[15]);
  int ok = host_a[15] == 45;
  free(host_a);
  return ok ? 0 : 1;
}
