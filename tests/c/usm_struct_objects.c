// CFLAGS: -fopenmp-version=51
// Struct objects under `requires unified_shared_memory`: a heap struct
// holding a heap array used in a region without maps, and a struct
// mapped tofrom whose pointer member is used on the device.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#pragma omp requires unified_shared_memory
typedef struct { int n; double *v; } Vec;
int main(void) {
  Vec *a = malloc(sizeof *a);
  a->n = 16;
  a->v = malloc(16 * sizeof(double));
  for (int i = 0; i < 16; i++) a->v[i] = i;
#pragma omp target
  for (int i = 0; i < a->n; i++) a->v[i] *= 2;
  Vec s = {4, a->v};
#pragma omp target map(tofrom : s)
  s.v[0] = 100;
  double sum = 0;
  for (int i = 0; i < 16; i++) sum += a->v[i];
  printf("%.0f\n", sum);
  free(a->v); free(a);
  return sum != 340;
}
