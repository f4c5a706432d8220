// The close map-type modifier is a placement hint; semantics stay those of the
// underlying map type.
#include <stdio.h>

int main(void) {
  float f[10];
  for (int i = 0; i < 10; i++)
    f[i] = (float)i;
  float s = 0;
#pragma omp target map(close, tofrom : f) map(close, tofrom : s)
  {
    for (int i = 0; i < 10; i++) {
      f[i] *= 3.0f;
      s += f[i];
    }
  }
  printf("s=%g f[9]=%g\n", s, f[9]);
  return (s == 135.0f && f[9] == 27.0f) ? 0 : 1;
}
