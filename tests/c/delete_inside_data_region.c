// target exit data map(delete:) inside a target data region that mapped the
// same variable: the mapping goes away at once; a later target region maps it
// afresh (and copies back), and the end of the data region finds nothing to
// do (no error).
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int x = 1;
#pragma omp target data map(tofrom : x)
  {
#pragma omp target exit data map(delete : x)
    printf("after delete: present=%d\n", omp_target_is_present(&x, dev));
#pragma omp target map(tofrom : x)
    x = 9;
    printf("after region: x=%d present=%d\n", x,
           omp_target_is_present(&x, dev));
  }
  printf("after data region: x=%d present=%d\n", x,
         omp_target_is_present(&x, dev));
  return x == 9 ? 0 : 1;
}
