/* `target update to` of a `const` declare-target global: the device copy
 * lies in the image's read-only memory. LLVM 14's host plugin copies into
 * it and the process dies of SIGSEGV; ours refuses the copy, and the
 * update fails as a failed copy does (LLVM's error, then its fatal
 * "offloading is mandatory" abort). Reading it works. */
#include <stdio.h>

const int ro_val = 7;
#pragma omp declare target(ro_val)

int main(void) {
  int out = 0;
#pragma omp target map(from : out)
  out = ro_val;
  printf("before=%d\n", out);
  fflush(stdout);
#pragma omp target update to(ro_val)
  printf("after_update=reached\n");
  return 0;
}
