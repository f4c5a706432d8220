// CHECK-STDERR
// CFLAGS: -fopenmp-version=51
// EXIT: 0
// EXIT-19: SIGABRT
// EXIT-22: SIGABRT
// A struct mapped from a member onward, and first-private arrays packed
// into one buffer, keep their host alignment on the device. LLVM 14 pads
// the struct's section down to 8 bytes on the host too, so the padding
// (s.x here) is mapped and `present` finds it; LLVM 19 and 22 allocate the
// padding on the device only (s.x is not present: the last map aborts
// there, with its 'present' message). LLVM 19 and 22 align each packed
// first-private argument as its host address is aligned (up to 16); LLVM
// 14 rounds each size up by size % 8. The device addresses' alignments are
// printed, which each release's runtime decides.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

struct S {
  int x;
  int y;
  double z;
};

static unsigned misalignment(const void *p, unsigned alignment) {
  return (unsigned)((uintptr_t)p % alignment);
}

int main(void) {
  int dev = omp_get_default_device();
  struct S s __attribute__((aligned(16))) = {1, 2, 3.0};

  // The struct's members y and z: a combined entry from &s.y (4 past a
  // 16-aligned base), then its two members.
  unsigned y_mis = 99, z_mis = 99;
  double sum = 0;
#pragma omp target map(tofrom : s.y, s.z) map(from : y_mis, z_mis, sum)
  {
    y_mis = misalignment(&s.y, 4);
    z_mis = misalignment(&s.z, 8);
    s.y += 10;
    s.z += 0.5;
    sum = s.y + s.z;
  }
  printf("members: y %% 4 = %u, z %% 8 = %u, y = %d, z = %.1f, sum = %.1f\n", y_mis,
         z_mis, s.y, s.z, sum);

  // First-private arrays of odd sizes between aligned ones.
  char a[3] = {1, 2, 3};
  double d[2] __attribute__((aligned(16))) = {1.5, 2.5};
  char b[5] = {4, 5, 6, 7, 8};
  long long q[2] __attribute__((aligned(16))) = {7, 9};
  unsigned d_mis = 99, q_mis = 99;
  double total = 0;
#pragma omp target firstprivate(a, d, b, q) map(from : d_mis, q_mis, total)
  {
    d_mis = misalignment(d, 8);
    q_mis = misalignment(q, 8);
    total = a[0] + a[2] + d[0] + d[1] + b[0] + b[4] + (double)(q[0] + q[1]);
  }
  printf("first-private: d %% 8 = %u, q %% 8 = %u, total = %.1f\n", d_mis, q_mis, total);

  // The padding before s.y: mapped as data by LLVM 14 only.
#pragma omp target enter data map(alloc : s.y, s.z)
  printf("s.x present: %d, s.y present: %d\n", omp_target_is_present(&s.x, dev),
         omp_target_is_present(&s.y, dev));
  fflush(stdout);
#pragma omp target enter data map(present, alloc : s.x)
  printf("s.x mapped through the padding\n");
#pragma omp target exit data map(release : s.x)
#pragma omp target exit data map(release : s.y, s.z)
  return 0;
}
