// `interop init(targetsync: obj) depend(inout: A)` then a deferred
// `target depend(inout: A) nowait`, and main returns 5 without a taskwait:
// the target task (ordered after the interop's) may still be pending when
// the exit closes the runtime, and libomp's finaliser waits for it. The
// process must end with status 5 promptly. (LLVM 14 aborts and LLVM 22
// segfaults here; our runtime used to hang in libomp's finaliser.)
#include <omp.h>
#include <stdio.h>

#define N 1024
static int A[N];

int main(void) {
  for (int i = 0; i < N; i++)
    A[i] = i;
  omp_interop_t obj = omp_interop_none;
#pragma omp interop init(targetsync : obj) depend(inout : A)
#pragma omp target depend(inout : A) map(tofrom : A) nowait
  for (int i = 0; i < N; i++)
    A[i] += 1;
  printf("interop_created=%d\n", obj != omp_interop_none);
  fflush(stdout);
  return 5;
}
