// A heap-allocated 2-D matrix (pointer to rows of fixed width) mapped as an
// array section, processed by a collapse(2) teams loop.
#include <stdio.h>
#include <stdlib.h>

#define W 17

int main(void) {
  int rows = 23;
  int(*m)[W] = malloc(rows * sizeof *m);
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < W; j++)
      m[i][j] = i - j;
#pragma omp target teams distribute parallel for collapse(2) \
    map(tofrom : m[0 : rows])
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < W; j++)
      m[i][j] = m[i][j] * m[i][j];
  long s = 0;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < W; j++)
      s += m[i][j];
  printf("m[0][16]=%d m[22][0]=%d sum=%ld\n", m[0][16], m[22][0], s);
  free(m);
  long expect = 0;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < W; j++)
      expect += (long)(i - j) * (i - j);
  return s == expect ? 0 : 1;
}
