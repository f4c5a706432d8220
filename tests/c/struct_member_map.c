// Mapping individual struct members (MEMBER_OF entries): only the listed
// members travel; others keep their host values. (Sections of member arrays
// hit a clang 14 codegen bug: see struct_member_section_codegen_bug.c.)
#include <stdio.h>

struct Particle {
  double x, y;
  int id;
  int hits[4];
  double mass;
};

int main(void) {
  struct Particle p = {1.0, 2.0, 7, {0, 0, 0, 0}, 3.0};
#pragma omp target map(tofrom : p.x, p.hits) map(to : p.id)
  {
    p.x += p.id;
    p.hits[1] = 11;
    p.hits[2] = 22;
  }
  printf("x=%g y=%g id=%d hits=%d,%d,%d,%d mass=%g\n", p.x, p.y, p.id,
         p.hits[0], p.hits[1], p.hits[2], p.hits[3], p.mass);
  struct Particle arr[3] = {{0, 0, 1, {0}, 1}, {0, 0, 2, {0}, 2}, {0, 0, 3, {0}, 3}};
#pragma omp target map(tofrom : arr[1].mass, arr[1].y)
  {
    arr[1].mass *= 10;
    arr[1].y = -1;
  }
  printf("arr[1].mass=%g arr[1].y=%g arr[0].mass=%g\n", arr[1].mass, arr[1].y,
         arr[0].mass);
  return (p.x == 8.0 && p.hits[2] == 22 && arr[1].mass == 20) ? 0 : 1;
}
