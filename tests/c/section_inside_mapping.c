// A section that lies inside an existing mapping reuses it: no new allocation,
// no transfer for a non-always map, and the device data is shared.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int a[20];
  for (int i = 0; i < 20; i++)
    a[i] = i;
#pragma omp target enter data map(to : a)
  printf("a[5] present=%d a[19] present=%d\n", omp_target_is_present(&a[5], dev),
         omp_target_is_present(&a[19], dev));
#pragma omp target map(tofrom : a[5 : 10])
  for (int i = 5; i < 15; i++)
    a[i] += 1000;
  printf("after inner region host a[5]=%d (not copied back: still mapped)\n",
         a[5]);
#pragma omp target map(tofrom : a[0 : 1])
  a[0] = a[5] + a[14];
#pragma omp target exit data map(from : a)
  printf("a[0]=%d a[5]=%d a[14]=%d a[15]=%d\n", a[0], a[5], a[14], a[15]);
  return (a[0] == 2019 && a[15] == 15) ? 0 : 1;
}
