// omp_target_is_present for addresses inside, at the edges of, and just past
// a mapped section.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int a[16];
#pragma omp target enter data map(alloc : a[4 : 8])
  int probes[] = {0, 3, 4, 5, 11, 12, 15};
  for (unsigned i = 0; i < sizeof probes / sizeof probes[0]; i++)
    printf("a[%d] present=%d\n", probes[i],
           omp_target_is_present(&a[probes[i]], dev));
  // An interior pointer as the start of a mapping reuses the enclosing entry.
#pragma omp target enter data map(to : a[6 : 2])
#pragma omp target exit data map(release : a[4 : 8])
  printf("after one release: a[4] present=%d\n",
         omp_target_is_present(&a[4], dev));
#pragma omp target exit data map(release : a[6 : 2])
  printf("after both releases: a[4] present=%d\n",
         omp_target_is_present(&a[4], dev));
  return 0;
}
