// ENV: LIBOMPTARGET_INFO=-1
// CHECK-STDERR: 19 22
// CFLAGS: {debug}
// The INFO lines of a pointer attached in a region (LLVM's lit
// offloading/force-usm.cpp without unified memory): `map(pGI[:1])` of a
// `declare target` pointer maps the pointee and points the device copy of
// pGI at it. LLVM 14 names that update's copy after the local it copies
// from (unknown) and the global's mapping not at all; LLVM 19 names the
// PTR_AND_OBJ update after the pointer's mapping (pGI, the global's
// symbol); clang 22 writes an ATTACH entry instead, whose update LLVM 22
// prints under the same name, and lists the entry as `attach`. Also the
// "Creating new map entry" and data-end lines of each release, and the
// table dumps with the global.
// LLVM 14's stderr is not compared: it names that update after the
// mapping next above the heap slot it copies from, so its name depends on
// LLVM 14's heap order (`beta` here, `pGI[:1]` in 2 of 3 fresh-
// clone CI runs of 2026-12-06), which no runtime can reproduce; its
// status and stdout still are.
#include <stdio.h>
#include <stdlib.h>

int GI;
#pragma omp declare target
int *pGI;
#pragma omp end declare target

int main(void) {
  GI = 0;
  int alpha = 1;
  int beta[3] = {2, 5, 8};
  pGI = (int *)malloc(sizeof(int));
  *pGI = 42;
#pragma omp target map(pGI[ : 1], GI)
  {
    GI = 1 * alpha;
    *pGI = 2 * beta[1];
  }
  printf("GI=%d *pGI=%d\n", GI, *pGI);
  int ok = GI == 1 && *pGI == 10;
  free(pGI);
  return ok ? 0 : 1;
}
