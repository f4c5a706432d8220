// ENV: OMP_TARGET_OFFLOAD=DISABLED
// OMP_TARGET_OFFLOAD=DISABLED: no devices are reported, every construct runs
// on the host, data-mapping constructs and the device-memory API act on the
// initial device.
#include <omp.h>
#include <stdio.h>

int main(void) {
  printf("num_devices=%d initial=%d\n", omp_get_num_devices(),
         omp_get_initial_device());
  int x = 1, where = -1;
#pragma omp target enter data map(to : x)
#pragma omp target map(tofrom : x) map(from : where)
  {
    x += 1;
    where = omp_is_initial_device();
  }
#pragma omp target exit data map(from : x)
  printf("x=%d on_initial=%d\n", x, where);
  int r = 0;
#pragma omp target teams distribute parallel for reduction(+ : r)
  for (int i = 0; i < 10; i++)
    r += i;
  printf("r=%d\n", r);
  return (x == 2 && where == 1 && r == 45) ? 0 : 1;
}
