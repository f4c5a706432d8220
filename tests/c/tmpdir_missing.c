// ENV: TMPDIR=/nonexistent/omptarget-tmpdir
// NO-VALGRIND: valgrind itself needs a usable TMPDIR (it cannot start); the memfd path is checked under valgrind by every other program
// TMPDIR naming a folder that does not exist must not stop offloading: the
// device images need no temporary file (LLVM 14's plugin writes them under
// a fixed /tmp path; ours loads them from memory). Every device runs a
// region over a declare target global and keeps its own copy of it.
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int hits = 10;
#pragma omp end declare target

int main(void) {
  int devices = omp_get_num_devices();
  int ok = devices > 0;
  for (int dev = 0; dev < devices; dev++) {
    int seen = 0;
#pragma omp target device(dev) map(from : seen)
    {
      hits += dev + 1;
      seen = hits;
    }
    printf("device %d: hits=%d\n", dev, seen);
    ok &= seen == 10 + dev + 1;
  }
  printf("devices=%d ok=%d\n", devices, ok);
  return ok ? 0 : 1;
}
