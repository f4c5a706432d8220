// RELEASES: 22
// (LLVM 22 added omp_get_uid_from_device.)
// EXIT-22: SIGABRT
// CHECK-STDERR
// omp_get_uid_from_device of a number that is neither a device, the
// initial device nor omp_invalid_device (here -1) is LLVM 22's fatal
// error, as for other calls on an unknown device.
#include <omp.h>
#include <stdio.h>

int main(void) {
  printf("before\n");
  fflush(stdout);
  const char *uid = omp_get_uid_from_device(-1);
  printf("not reached: %s\n", uid ? uid : "(null)");
  return 0;
}
