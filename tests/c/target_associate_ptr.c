// CHECK-STDERR
// omp_target_associate_ptr / omp_target_disassociate_ptr: a device buffer from
// omp_target_alloc is associated with a host array (with a device offset), so
// map clauses reuse it without transfers; then the error cases LLVM 14
// reports: re-associating a different buffer, associating on the host,
// disassociating something that is not associated, and disassociating a
// mapping that was not created by associate.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int host = omp_get_initial_device();
  int a[8];
  for (int i = 0; i < 8; i++)
    a[i] = i;
  int *buf = omp_target_alloc(16 * sizeof(int), dev);
  int init[16];
  for (int i = 0; i < 16; i++)
    init[i] = 1000 + i;
  omp_target_memcpy(buf, init, sizeof init, 0, 0, dev, host);
  int rc = omp_target_associate_ptr(a, buf, sizeof a, 4 * sizeof(int), dev);
  printf("associate rc=%d present=%d\n", rc, omp_target_is_present(a, dev));
  rc = omp_target_associate_ptr(a, buf, sizeof a, 4 * sizeof(int), dev);
  printf("same association again rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_associate_ptr(a, buf, sizeof a, 0, dev);
  printf("different association rc=%d\n", rc);
  fflush(stdout);
  // tofrom on associated data: no transfer in either direction (the
  // association holds the reference), but the kernel sees the device buffer.
  int first = 0;
#pragma omp target map(tofrom : a) map(from : first)
  {
    first = a[0];
    a[1] = -1;
  }
  printf("kernel saw a[0]=%d host a[1]=%d\n", first, a[1]);
#pragma omp target update from(a)
  printf("after update from: a[0]=%d a[1]=%d a[7]=%d\n", a[0], a[1], a[7]);
  rc = omp_target_disassociate_ptr(a, dev);
  printf("disassociate rc=%d present=%d\n", rc, omp_target_is_present(a, dev));
  fflush(stdout);
  rc = omp_target_disassociate_ptr(a, dev);
  printf("disassociate again rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_associate_ptr(a, buf, sizeof a, 0, host);
  printf("associate on host rc=%d\n", rc);
  fflush(stdout);
  int m = 3;
#pragma omp target enter data map(to : m)
  rc = omp_target_disassociate_ptr(&m, dev);
  printf("disassociate mapped (not associated) rc=%d present=%d\n", rc,
         omp_target_is_present(&m, dev));
  fflush(stdout);
#pragma omp target exit data map(delete : m)
  omp_target_free(buf, dev);
  return (first == 1004 && a[1] == -1) ? 0 : 1;
}
