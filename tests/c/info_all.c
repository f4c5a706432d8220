// ENV: LIBOMPTARGET_INFO=-1
// CHECK-STDERR
// CFLAGS: -fopenmp-version=51
// LIBOMPTARGET_INFO=-1 (every info bit): the INFO lines LLVM 14 prints for
// each kind of construct, compared byte for byte (addresses normalised):
// "Entering OpenMP kernel/data region ... with N arguments" and one line per
// argument (every map kind, implicit, firstprivate, private), "Creating new
// map entry", "Mapping exists" with reference counts, "Removing map entry",
// both directions of "Copying data", the mapping-table dump after each
// region, and the dump at exit of what is still mapped (on two devices).
// Each release's own wording: LLVM 19/22 print more fields when creating a
// mapping, make a data end's final decrement at once, say "table empty",
// name the global's mapping, and their plugins announce each launch.
#include <omp.h>
#include <stdio.h>

int table[4] = {1, 2, 3, 4};
#pragma omp declare target(table)

int main(void) {
  int a[8], b[8], c[8];
  double scale = 2.0;
  for (int i = 0; i < 8; i++) {
    a[i] = i;
    b[i] = 0;
    c[i] = 10 * i;
  }
  int tmp[2];
  int work[4];
  int n = 8;

  // Kernel with explicit to/from/tofrom/alloc, a firstprivate and an
  // implicit scalar, a private array and a declare target global.
#pragma omp target map(to : a) map(from : b) map(tofrom : c) map(alloc : work) \
    firstprivate(scale) private(tmp)
  {
    for (int i = 0; i < n; i++) {
      b[i] = (int)(a[i] * scale) + table[i % 4];
      c[i] += 1;
    }
    work[0] = tmp[0] = 1;
  }
  printf("b[7]=%d c[7]=%d\n", b[7], c[7]);

  // A data region: the kernel inside finds its data mapped.
#pragma omp target data map(tofrom : a) map(to : c)
  {
#pragma omp target map(tofrom : a)
    {
      for (int i = 0; i < 8; i++)
        a[i] += c[i];
    }
  }
  printf("a[7]=%d\n", a[7]);

  // Unstructured mapping, reference counts and updates.
#pragma omp target enter data map(to : b)
#pragma omp target enter data map(to : b)
  for (int i = 0; i < 8; i++)
    b[i] = -i;
#pragma omp target update to(b)
#pragma omp target teams map(present, tofrom : b)
  {
    b[1] = 100;
  }
#pragma omp target update from(b)
#pragma omp target exit data map(release : b)
#pragma omp target exit data map(from : b)
  printf("b[1]=%d\n", b[1]);

  // Left mapped on devices 0 and 1: the exit-time table dump lists them.
#pragma omp target enter data map(to : a[0 : 4])
#pragma omp target enter data map(alloc : c) device(1)
  printf("done\n");
  return 0;
}
