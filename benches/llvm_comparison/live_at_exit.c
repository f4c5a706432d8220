// A whole offload process that leaves 10,000 64-byte omp_target_alloc
// blocks live at exit, then runs one target region: what a program that
// never frees its device memory pays, in its allocations (made while the
// region's image is still waiting to be loaded) and at exit. compare.py
// measures its wall time from outside, per runtime.
//
// Build: clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
//          benches/llvm_comparison/live_at_exit.c -o live_at_exit
#include <omp.h>
#include <stdio.h>

#define BLOCKS 10000

int main(void) {
  int made = 0;
  for (int i = 0; i < BLOCKS; i++)
    if (omp_target_alloc(64, 0))
      made++;
#pragma omp target map(tofrom : made)
  made += 1;
  if (made != BLOCKS + 1) {
    printf("FAILED live at exit: made=%d\n", made);
    return 1;
  }
  return 0;
}
