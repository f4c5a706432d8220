// EXIT-19: SIGABRT
// EXIT-22: SIGABRT
// (LLVM 19 and 22: omp_target_alloc on an unknown device is a fatal error.)
// CHECK-STDERR
// Device-memory API calls with device numbers that do not exist (too large,
// negative): they fail softly. omp_target_alloc returns NULL,
// omp_target_is_present returns 0, omp_target_memcpy and
// omp_target_associate_ptr return an error (and print a libomptarget error
// line), omp_target_free does nothing.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, y = 0;
  int n = omp_get_num_devices();
  int bad[] = {n + 1, 99, -7};
  for (int i = 0; i < 3; i++) {
    int d = bad[i];
    void *p = omp_target_alloc(64, d);
    printf("dev %d: alloc=%s is_present=%d\n", i, p ? "non-null" : "null",
           omp_target_is_present(&x, d));
    fflush(stdout);
    int rc = omp_target_memcpy(&y, &x, sizeof x, 0, 0, d,
                               omp_get_initial_device());
    printf("dev %d: memcpy to bad device rc=%d\n", i, rc);
    fflush(stdout);
    rc = omp_target_memcpy(&y, &x, sizeof x, 0, 0, omp_get_initial_device(), d);
    printf("dev %d: memcpy from bad device rc=%d\n", i, rc);
    fflush(stdout);
    rc = omp_target_associate_ptr(&x, &y, sizeof x, 0, d);
    printf("dev %d: associate rc=%d\n", i, rc);
    fflush(stdout);
    rc = omp_target_disassociate_ptr(&x, d);
    printf("dev %d: disassociate rc=%d\n", i, rc);
    fflush(stdout);
    omp_target_free(&y, d); // no device: nothing to do
  }
  printf("y=%d\n", y);
  return y == 0 ? 0 : 1;
}
