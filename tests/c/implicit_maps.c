// Implicit data-mapping rules: a scalar is firstprivate (device writes are
// lost), an array is tofrom, a pointer is mapped as a zero-length section
// (attached to an existing mapping of its pointee if there is one).
#include <stdio.h>

int main(void) {
  int scalar = 7;
  int arr[5] = {1, 2, 3, 4, 5};
  int heap_data[3] = {10, 20, 30};
  int *p = heap_data;
  int sum_via_ptr = 0;
#pragma omp target enter data map(to : heap_data)
#pragma omp target map(tofrom : sum_via_ptr)
  {
    scalar = scalar * 100; // firstprivate copy
    for (int i = 0; i < 5; i++)
      arr[i] += scalar;
    for (int i = 0; i < 3; i++)
      sum_via_ptr += p[i];
  }
#pragma omp target exit data map(release : heap_data)
  printf("scalar=%d arr=%d,%d,%d,%d,%d sum_via_ptr=%d\n", scalar, arr[0],
         arr[1], arr[2], arr[3], arr[4], sum_via_ptr);
  return (scalar == 7 && arr[0] == 701 && sum_via_ptr == 60) ? 0 : 1;
}
