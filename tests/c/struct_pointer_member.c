// A struct with a pointer member: map(s, s.data[0:n]) maps the struct and the
// pointee and attaches the device copy of s.data to the device buffer
// (PTR_AND_OBJ).
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int n;
  double *data;
  double scale;
} Vec;

int main(void) {
  Vec v;
  v.n = 12;
  v.scale = 0.5;
  v.data = malloc(v.n * sizeof(double));
  for (int i = 0; i < v.n; i++)
    v.data[i] = i;
  double sum = 0;
#pragma omp target map(to : v) map(tofrom : v.data[0 : v.n]) map(tofrom : sum)
  {
    for (int i = 0; i < v.n; i++) {
      v.data[i] *= v.scale;
      sum += v.data[i];
    }
  }
  printf("sum=%g data[11]=%g\n", sum, v.data[11]);
  // Pointer inside a mapped struct pointer: map(ps[0:1], ps->data[0:n]).
  Vec *ps = &v;
#pragma omp target map(to : ps[0 : 1]) map(tofrom : ps->data[0 : ps->n])
  for (int i = 0; i < ps->n; i++)
    ps->data[i] += 1;
  printf("data[0]=%g data[11]=%g\n", v.data[0], v.data[11]);
  int ok = sum == 33 && v.data[11] == 6.5;
  free(v.data);
  return ok ? 0 : 1;
}
