// RELEASES: 19 22
// CHECK-STDERR
// omp_get_mapped_ptr (OpenMP 5.1, LLVM 19+): the device address of mapped
// data (interior pointers too), the pointer itself for the initial device,
// NULL for unmapped data, a device past the last one, and (with LLVM's
// error line) a NULL pointer. Also omp_get_device_num on the host.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  int a[16], unmapped = 0;
  for (int i = 0; i < 16; i++)
    a[i] = i;
  printf("device num on the host is the initial device=%d\n",
         omp_get_device_num() == host);
#pragma omp target enter data map(to : a[0 : 16]) device(dev)
  int *pa = omp_get_mapped_ptr(a, dev);
  int *p5 = omp_get_mapped_ptr(&a[5], dev);
  printf("mapped=%d interior offset=%ld differs from host=%d\n", pa != NULL,
         (long)(p5 - pa), pa != a);
  int seen = -1;
#pragma omp target is_device_ptr(p5) map(from : seen) device(dev)
  seen = *p5;
  printf("device reads through it: %d\n", seen);
  printf("initial device gives the pointer=%d\n", omp_get_mapped_ptr(a, host) == a);
  printf("unmapped=%d\n", omp_get_mapped_ptr(&unmapped, dev) == NULL);
  printf("past the last device=%d\n", omp_get_mapped_ptr(a, host + 1) == NULL);
  fflush(stdout);
  printf("null=%d\n", omp_get_mapped_ptr(NULL, dev) == NULL);
#pragma omp target exit data map(release : a[0 : 16]) device(dev)
  printf("after release=%d\n", omp_get_mapped_ptr(a, dev) == NULL);
  return seen == 5 ? 0 : 1;
}
