// Non-contiguous target update (strided array sections, OpenMP 5.0). clang 14
// emits the NON_CONTIG descriptor for the 2-D case; for the 1-D case with a
// runtime stride it emits a plain contiguous section (stride dropped). Which
// elements land on the host is whatever libomptarget 14 does with those
// descriptors; this program prints it so both runtimes can be compared.
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  int st = argc + 1; // 2, not a compile-time constant
  int a[10];
  int b[4][6];
  for (int i = 0; i < 10; i++)
    a[i] = i;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      b[i][j] = 0;
#pragma omp target enter data map(to : a, b)
#pragma omp target
  {
    for (int i = 0; i < 10; i++)
      a[i] *= 10;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 6; j++)
        b[i][j] = i * 10 + j;
  }
#pragma omp target update from(a[1 : 4 : st])
  for (int i = 0; i < 10; i++)
    printf("%d%c", a[i], i == 9 ? '\n' : ' ');
#pragma omp target update from(b[0 : 2 : 2][1 : 2 : 3])
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      printf("%d%c", b[i][j], j == 5 ? '\n' : ' ');
  // Strided update to the device, then fetch everything back.
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      b[i][j] = -1;
#pragma omp target update to(b[1 : 2 : 2][0 : 3 : 2])
#pragma omp target exit data map(from : b) map(delete : a)
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      printf("%d%c", b[i][j], j == 5 ? '\n' : ' ');
  return 0;
}
