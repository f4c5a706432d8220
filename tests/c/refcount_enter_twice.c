// Reference counting: two enter data on the same variable need two releases
// before the mapping goes away; copy-back happens only on the last one.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int x = 1;
#pragma omp target enter data map(to : x)
#pragma omp target enter data map(to : x)
#pragma omp target map(tofrom : x)
  x = 50; // refcount 2 -> 3 -> 2: no copy back yet
#pragma omp target exit data map(from : x)
  printf("after first exit: present=%d x=%d\n", omp_target_is_present(&x, dev),
         x);
#pragma omp target exit data map(from : x)
  printf("after second exit: present=%d x=%d\n",
         omp_target_is_present(&x, dev), x);
  return x == 50 ? 0 : 1;
}
