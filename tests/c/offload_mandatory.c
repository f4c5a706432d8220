// ENV: OMP_TARGET_OFFLOAD=MANDATORY
// OMP_TARGET_OFFLOAD=MANDATORY with working devices: everything offloads.
#include <omp.h>
#include <stdio.h>

int main(void) {
  printf("num_devices=%d\n", omp_get_num_devices());
  int where = -1, v = 3;
#pragma omp target map(from : where) map(tofrom : v)
  {
    where = omp_is_initial_device();
    v *= 7;
  }
  printf("on_initial=%d v=%d\n", where, v);
  return (where == 0 && v == 21) ? 0 : 1;
}
