// EXIT-19: 0
// EXIT-22: 0
// (clang 19 and 22 compile this differently; the program runs to its end.)
// CHECK-STDERR
// EXIT: SIGABRT
// EXTRA-BUILD: {cc} {offload} {debug} -fPIC -shared lib/dlopen_kernels.c -o {out}/libdlopen_kernels.so
// LDFLAGS: -ldl
// ARGS: {out}/libdlopen_kernels.so
// Every offload translation unit registers its `requires` flags; all must
// agree. This program requires unified_shared_memory, the library it
// dlopen()s does not: libomptarget 14 aborts inside dlopen with "Libomptarget
// fatal error 1: '#pragma omp requires unified_shared_memory' not used
// consistently!".
#include <dlfcn.h>
#include <stdio.h>

#pragma omp requires unified_shared_memory

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("own region ran: x=%d\n", x);
  fflush(stdout);
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  printf("not reached: dlopen returned %s\n", h ? "a handle" : "NULL");
  return 0;
}
