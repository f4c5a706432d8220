// use_device_ptr on a pointer whose pointee is not mapped: libomptarget 14
// hands the region a NULL pointer (not the host address).
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4};
  int *p = a;
  int is_null = -1, is_host = -1;
#pragma omp target data use_device_ptr(p)
  {
    is_null = p == NULL;
    is_host = p == a;
  }
  printf("unmapped use_device_ptr: null=%d host address=%d\n", is_null,
         is_host);
  printf("after region p restored=%d\n", p == a);
  return 0;
}
