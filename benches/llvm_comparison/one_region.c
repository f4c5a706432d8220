// A whole offload process with one target region: what a short-lived
// program pays for the runtime's start, one launch and exit. compare.py
// measures its wall time and peak RSS from outside (wait4), per runtime.
//
// Build: clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
//          benches/llvm_comparison/one_region.c -o one_region
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 41, on_host = 1;
#pragma omp target map(tofrom : x, on_host)
  {
    x++;
    on_host = omp_is_initial_device();
  }
  if (x != 42 || on_host) {
    printf("FAILED one region: x=%d on_host=%d\n", x, on_host);
    return 1;
  }
  return 0;
}
