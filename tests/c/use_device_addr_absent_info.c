// ENV: LIBOMPTARGET_INFO=64
// CHECK-STDERR
// LIBOMPTARGET_INFO bit 0x40: LLVM 19 and 22 say "variable x does not
// have a valid device counterpart" for use_device_addr of a variable with
// no device data (the pointer x itself, when only x[0:10] is mapped);
// LLVM 14 has no such message. A mapped operand prints nothing. LLVM 22
// hands the region x's host address; LLVM 14 and 19 a null address of x
// (the region must not read x then), so only clang 22+ builds look.
#include <stdio.h>

int main(void) {
  float arr[10] = {0};
  float *x = &arr[0];
  int entered = 0, same = 1, translated = -1;
#pragma omp target data map(to : x[0 : 10])
  {
#pragma omp target data use_device_addr(x)
    {
      entered = 1;
#if __clang_major__ >= 20
      same = x == &arr[0];
#endif
    }
#pragma omp target data use_device_addr(x[0 : 10])
    translated = x != &arr[0];
  }
  printf("entered=%d; unmapped use_device_addr keeps the host address "
         "(clang 22): %d\n",
         entered, same);
  printf("mapped use_device_addr translated: %d\n", translated);
  return 0;
}
