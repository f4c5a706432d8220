// EXTRA-BUILD: {cc} {offload} {debug} -fPIC -shared lib/dlopen_kernels.c -o {out}/libdlopen_kernels.so
// LDFLAGS: -ldl
// ARGS: {out}/libdlopen_kernels.so 20
// dlopen / use / dlclose an offload shared library N times (argv[2]). This
// program has no offload code itself, so each dlopen brings the offload
// runtime in and each dlclose may take it down again: the runtime must start
// and stop cleanly every time. valgrind_c.rs also runs it with N=10 and N=100
// to check memory does not grow with N.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*scale_sum_fn)(int *, int, int);
typedef int (*count_fn)(void);

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s path/to/libdlopen_kernels.so iterations\n",
            argv[0]);
    return 2;
  }
  int iterations = atoi(argv[2]);
  long total = 0;
  int max_calls = 0;
  for (int it = 0; it < iterations; it++) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      printf("iteration %d: dlopen failed\n", it);
      return 3;
    }
    scale_sum_fn scale_sum = (scale_sum_fn)dlsym(h, "kernels_scale_sum");
    count_fn count_call = (count_fn)dlsym(h, "kernels_count_call");
    if (!scale_sum || !count_call) {
      printf("iteration %d: dlsym failed\n", it);
      return 4;
    }
    int v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    total += scale_sum(v, 8, it);
    // A fresh load starts from the image's initial value each time.
    int c = count_call();
    if (c > max_calls)
      max_calls = c;
    if (dlclose(h) != 0) {
      printf("iteration %d: dlclose failed\n", it);
      return 5;
    }
  }
  printf("iterations=%d total=%ld max_calls=%d\n", iterations, total,
         max_calls);
  long expect = 36L * iterations * (iterations - 1) / 2;
  return total == expect ? 0 : 1;
}
