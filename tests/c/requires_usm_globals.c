// RELEASES: 19 22
// (LLVM 14 leaves the device's reference to the host global null: the
// region crashes on its own runtime.)
// ENV: LIBOMPTARGET_INFO=-1
// CHECK-STDERR
// CFLAGS: {debug}
// `requires unified_shared_memory` with `declare target` globals: clang
// gives the device a reference to each host global (`..._decl_tgt_ref_ptr`)
// and LLVM 19/22 write the host global's address into it when the image is
// loaded, so the region reads and writes the host's globals. Under INFO:
// "Return HstPtrBegin ... for unified shared memory" for each section,
// and the table dumps list the references' mappings under their symbol
// names.
#include <stdio.h>
#include <stdlib.h>
#pragma omp requires unified_shared_memory

#pragma omp declare target
int *pGI;
int T = 7;
#pragma omp end declare target

int main(void) {
  pGI = (int *)malloc(sizeof(int));
  *pGI = 42;
  int r = 0;
  int local[4] = {1, 2, 3, 4};
#pragma omp target map(tofrom : r) map(to : local)
  {
    r = *pGI + T + local[3];
    T = 9;
  }
  printf("r=%d T=%d\n", r, T);
  int ok = r == 53 && T == 9;
  free(pGI);
  return ok ? 0 : 1;
}
