// RELEASES: 19 22
// CFLAGS: -fopenmp-version=51
// ENV: LIBOMPTARGET_INFO=32
// CHECK-STDERR
// `declare target indirect` (clang 17+): the function's entry (flag 0x08,
// size 8) names a device global holding the device function's address;
// the runtime maps the host function to that address (read from the
// device, the INFO line "Copying data from device to host ... Size=8"), so
// a host function pointer captured by a region is called on the device,
// and &square taken on the device is what the host pointer maps to.
// One indirect function only: LLVM 19/22 name a copy that no mapping
// contains after the nearest mapping (printCopyInfo keeps lookupMapping's
// neighbour), so a second function's read would be named after the first,
// which this runtime does not reproduce.
#include <stdio.h>

int square(int x) { return x * x; }
#pragma omp declare target indirect to(square)

typedef int (*fp_t)(int);

int main(void) {
  fp_t on_device = 0;
#pragma omp target map(from : on_device)
  on_device = &square;

  fp_t captured = square, copy = 0;
#pragma omp target map(from : copy)
  copy = captured;
  printf("device &square == captured host pointer: %s\n",
         copy == on_device ? "yes" : "no");

  int r[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
#pragma omp target map(from : r[i : 1])
    r[i] = captured(7 + i);
  }
  printf("square(7)=%d square(8)=%d\n", r[0], r[1]);
  return r[0] == 49 && r[1] == 64 ? 0 : 1;
}
