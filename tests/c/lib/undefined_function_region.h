// The body of image_undefined_function.c and image_undefined_function_zundefs.c:
// a region calls a function the device image does not define (it is in a
// host-only object of the program, lib/host_only_fn.c, not exported to
// libraries), on a branch that is not taken.
#include <stdio.h>

void host_only_fn(int *r);

int main(int argc, char **argv) {
  (void)argv;
  int take = argc > 5; // never, as the suite runs it
  int r = 0;
#pragma omp target map(tofrom : r) map(to : take)
  {
    if (take)
      host_only_fn(&r);
    r += 42;
  }
  printf("r=%d\n", r);
  return r == 42 ? 0 : 1;
}
