// Nested target data regions over the same and overlapping data: only the
// outermost region allocates and copies; inner regions just take references.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int a[10], b[10];
  for (int i = 0; i < 10; i++) {
    a[i] = i;
    b[i] = 0;
  }
#pragma omp target data map(to : a) map(from : b)
  {
#pragma omp target data map(tofrom : a[2 : 4]) map(tofrom : b)
    {
#pragma omp target data map(alloc : a, b)
      {
#pragma omp target
        for (int i = 0; i < 10; i++) {
          b[i] = a[i] * 2;
          a[i] = -1;
        }
      }
      printf("innermost closed: host b[9]=%d\n", b[9]);
    }
    printf("middle closed: host a[3]=%d b[9]=%d present=%d\n", a[3], b[9],
           omp_target_is_present(b, dev));
  }
  printf("outer closed: host a[3]=%d b[9]=%d present=%d\n", a[3], b[9],
         omp_target_is_present(b, dev));
  return (a[3] == 3 && b[9] == 18) ? 0 : 1;
}
