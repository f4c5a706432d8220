// ENV: OMP_TARGET_OFFLOAD=DISABLED
// With offloading disabled, device(n) for any n (even one that would not
// exist) runs the region on the host without an error.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int where = -1;
#pragma omp target device(3) map(from : where)
  where = omp_is_initial_device();
  printf("device(3) ran on initial device=%d\n", where);
  void *p = omp_target_alloc(16, 0);
  printf("initial device=%d omp_target_alloc(16, 0) = %s\n",
         omp_get_initial_device(), p ? "non-null" : "null");
  // Device 0 is the initial device here, so this is a plain free().
  omp_target_free(p, 0);
  return where == 1 ? 0 : 1;
}
