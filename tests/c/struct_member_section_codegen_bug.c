// EXIT-19: 0
// EXIT-22: 0
// (clang 19 and 22 compile this differently; the program runs to its end.)
// CHECK-STDERR
// EXIT: SIGABRT
// clang 14 quirk: for map(p.x, p.hits[1:2]) the combined struct entry it
// emits runs from p.x to &p.hits[0] + 8 bytes (the section's start index is
// dropped), so the hits[1:2] member entry extends past it. libomptarget 14
// reports "explicit extension not allowed" and aborts; a replacement runtime
// must fail the same way.
#include <stdio.h>

struct Particle {
  double x, y;
  int id;
  int hits[4];
  double mass;
};

int main(void) {
  struct Particle p = {1.0, 2.0, 7, {0, 0, 0, 0}, 3.0};
  printf("mapping members\n");
  fflush(stdout);
#pragma omp target map(tofrom : p.x, p.hits[1 : 2])
  {
    p.x += 1;
    p.hits[1] = 11;
  }
  printf("not reached: %g\n", p.x);
  return 0;
}
