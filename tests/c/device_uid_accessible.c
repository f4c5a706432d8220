// RELEASES: 22
// (LLVM 22 added these calls; 14 and 19 do not export them.)
// Device UIDs and omp_target_is_accessible (OpenMP 6.0, LLVM 22): each
// device's UID maps back to its number, the initial device is "HOST",
// omp_invalid_device and unknown UIDs give omp_invalid_device; no host
// device says it can access host memory (LLVM 22's host plugin does not),
// the initial device and -1 do, a null pointer never is.
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int n = omp_get_num_devices();
  int initial = omp_get_initial_device();
  int bad = 0;
  for (int d = 0; d <= n; d++) {
    const char *uid = omp_get_uid_from_device(d);
    int back = uid ? omp_get_device_from_uid(uid) : -100;
    // The same pointer on every call (the string lives with the runtime).
    bad += uid != omp_get_uid_from_device(d);
    printf("device %d: uid=%s back=%d\n", d, uid ? uid : "(null)", back);
  }
  printf("invalid device: uid null=%d\n",
         omp_get_uid_from_device(omp_invalid_device) == NULL);
  printf("from NULL=%d from bogus=%d from HOST=%d (initial %d)\n",
         omp_get_device_from_uid(NULL), omp_get_device_from_uid("bogus"),
         omp_get_device_from_uid("HOST"), initial);
  int x[4];
  for (int d = 0; d < n; d++)
    printf("device %d: accessible=%d\n", d,
           omp_target_is_accessible(x, sizeof x, d));
  printf("initial: accessible=%d, -1: %d, null on initial: %d\n",
         omp_target_is_accessible(x, sizeof x, initial),
         omp_target_is_accessible(x, sizeof x, -1),
         omp_target_is_accessible(NULL, 4, initial));
  return bad;
}
