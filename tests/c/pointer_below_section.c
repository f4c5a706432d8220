// A pointer whose data was mapped as a section that does not start at it
// (map(to: a[64:128]), then the pointer a itself with length zero):
// LLVM 15+ find the section by the base it was mapped through, LLVM 14
// does not. use_device_ptr(a) gets a's device value (14: NULL); a
// zero-length section at a counts on and deletes that mapping (14: finds
// nothing); omp_target_is_present(a) asks about the byte at a, which no
// release finds.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024
#define FROM 64
#define LENGTH 128

int main(void) {
  int dev = omp_get_default_device();
  float *a = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++)
    a[i] = i;
  float *host = a;
#pragma omp target enter data map(to : a[FROM : LENGTH])
  // The device address of the section, through a pointer to its begin
  // (found alike by every release).
  float *section = &a[FROM], *device_section = NULL;
#pragma omp target data use_device_ptr(section)
  device_section = section;

  float *a_dev = NULL;
#pragma omp target data use_device_ptr(a)
  a_dev = a;
  printf("use_device_ptr: null=%d host=%d translated=%d\n", a_dev == NULL,
         a_dev == host, a_dev != NULL && a_dev + FROM == device_section);
  printf("after: a restored=%d present(a)=%d present(a+FROM)=%d\n",
         a == host, omp_target_is_present(a, dev),
         omp_target_is_present(&a[FROM], dev));

  // A zero-length enter and exit count on the section found (if any).
#pragma omp target enter data map(to : a[0 : 0])
#pragma omp target exit data map(release : a[FROM : LENGTH])
  printf("after zero-length enter and one release: present(a+FROM)=%d\n",
         omp_target_is_present(&a[FROM], dev));
  // delete through the pointer: found by base, the mapping goes.
#pragma omp target exit data map(delete : a[0 : 0])
  printf("after zero-length delete: present(a+FROM)=%d\n",
         omp_target_is_present(&a[FROM], dev));
  if (omp_target_is_present(&a[FROM], dev)) {
#pragma omp target exit data map(delete : a[FROM : LENGTH])
  }
  printf("finally: present(a+FROM)=%d\n", omp_target_is_present(&a[FROM], dev));
  free(a);
  return 0;
}
