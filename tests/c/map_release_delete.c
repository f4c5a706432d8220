// target exit data with release decrements the reference count; delete drops
// the mapping whatever the count is.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 5;
  int dev = omp_get_default_device();
#pragma omp target enter data map(to : x)
#pragma omp target enter data map(to : x)
#pragma omp target enter data map(to : x)
  printf("after 3x enter: present=%d\n", omp_target_is_present(&x, dev));
#pragma omp target exit data map(release : x)
  printf("after release: present=%d\n", omp_target_is_present(&x, dev));
#pragma omp target exit data map(delete : x)
  printf("after delete: present=%d\n", omp_target_is_present(&x, dev));
  // Releasing something that is not mapped is a no-op.
#pragma omp target exit data map(release : x)
  printf("after release of unmapped: present=%d x=%d\n",
         omp_target_is_present(&x, dev), x);
  return 0;
}
