// User-defined mapper (declare mapper): mapping a struct through the mapper
// also maps the buffer its pointer member points to.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int len;
  int *buf;
} Array;

#pragma omp declare mapper(Array a) map(a, a.buf[0 : a.len])
#pragma omp declare mapper(halfmap : Array a) map(a.len, a.buf[0 : a.len / 2])

int main(void) {
  Array x;
  x.len = 10;
  x.buf = malloc(x.len * sizeof(int));
  for (int i = 0; i < x.len; i++)
    x.buf[i] = i;
#pragma omp target map(tofrom : x)
  for (int i = 0; i < x.len; i++)
    x.buf[i] *= 2;
  printf("default mapper: %d %d %d\n", x.buf[0], x.buf[5], x.buf[9]);
#pragma omp target map(mapper(halfmap), tofrom : x)
  for (int i = 0; i < x.len / 2; i++)
    x.buf[i] += 1;
  printf("named mapper: %d %d %d\n", x.buf[0], x.buf[4], x.buf[5]);
  // Mapper used by target enter data, target update and target exit data.
  int dev = omp_get_default_device();
#pragma omp target enter data map(to : x)
  printf("buffer present via mapper=%d\n", omp_target_is_present(x.buf, dev));
  int *b = x.buf;
#pragma omp target map(to : b[0 : 0])
  for (int i = 0; i < 10; i++)
    b[i] = -b[i];
#pragma omp target update from(x)
  printf("after update: %d %d\n", x.buf[1], x.buf[9]);
#pragma omp target exit data map(delete : x)
  printf("buffer present after exit=%d\n", omp_target_is_present(x.buf, dev));
  int ok = x.buf[9] == -18 && x.buf[1] == -3;
  free(x.buf);
  return ok ? 0 : 1;
}
