// map(from:) allocates device storage without copying in and copies it back at
// the end of the region.
#include <stdio.h>

int main(void) {
  double v[16];
  for (int i = 0; i < 16; i++)
    v[i] = -7.0;
#pragma omp target map(from : v)
  {
    for (int i = 0; i < 16; i++)
      v[i] = i * 0.5;
  }
  int ok = 1;
  for (int i = 0; i < 16; i++) {
    printf("%g%c", v[i], i == 15 ? '\n' : ' ');
    if (v[i] != i * 0.5)
      ok = 0;
  }
  return ok ? 0 : 1;
}
