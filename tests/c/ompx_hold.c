// CFLAGS: -fopenmp-extensions
// The ompx_hold map-type modifier (LLVM extension): while a hold reference
// exists, target exit data (even with delete) cannot remove the mapping.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int x = 10;
#pragma omp target data map(ompx_hold, tofrom : x)
  {
#pragma omp target enter data map(to : x)
#pragma omp target exit data map(delete : x)
    printf("inside hold after delete: present=%d\n",
           omp_target_is_present(&x, dev));
#pragma omp target map(tofrom : x)
    x += 5;
    printf("inside hold: host x=%d\n", x);
  }
  printf("after hold region: present=%d x=%d\n", omp_target_is_present(&x, dev),
         x);
  return x == 15 ? 0 : 1;
}
