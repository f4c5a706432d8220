// Zero-length array sections: mapping p[0:0] allocates nothing; inside a
// region where the pointee is mapped it yields the device address (and the
// pointer is attached); if nothing is mapped the device sees the host pointer
// value unchanged (NULL stays NULL).
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int data[4] = {1, 2, 3, 4};
  int *p = data;
  int *null_ptr = NULL;
  int got = 0, null_seen = -1;
#pragma omp target enter data map(to : data)
#pragma omp target map(to : p[0 : 0]) map(from : got)
  got = p[3];
#pragma omp target exit data map(delete : data)
#pragma omp target map(to : null_ptr[0 : 0]) map(from : null_seen)
  null_seen = null_ptr == NULL;
#pragma omp target enter data map(to : p[0 : 0])
  printf("got=%d null_seen=%d present after zero-length enter=%d\n", got,
         null_seen, omp_target_is_present(p, dev));
#pragma omp target exit data map(release : p[0 : 0])
  return (got == 4 && null_seen == 1) ? 0 : 1;
}
