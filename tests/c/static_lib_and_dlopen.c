// EXTRA-BUILD: {cc} {debug} -c lib/host_helpers.c -o {out}/host_helpers.o
// EXTRA-BUILD: ar rcs {out}/libhost_helpers.a {out}/host_helpers.o
// EXTRA-BUILD: {cc} {offload} {debug} -fPIC -shared lib/dlopen_kernels.c -o {out}/libdlopen_kernels.so
// LDFLAGS: -L{out} -lhost_helpers -ldl
// ARGS: {out}/libdlopen_kernels.so
// A program with its own target regions that links a static library (host
// helpers) and dlopen()s a second offload image at run time: both images are
// registered with the one libomptarget, used, and the dlopened one is
// unregistered at dlclose while the program's own image stays usable.
#include <dlfcn.h>
#include <stdio.h>

#include "lib/host_helpers.h"

typedef int (*scale_sum_fn)(int *, int, int);
typedef int (*count_fn)(void);

static int own_kernel(int x) {
  int r = 0;
#pragma omp target map(from : r)
  r = x + 1;
  return r;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libdlopen_kernels.so\n", argv[0]);
    return 2;
  }
  int v[20];
  helpers_fill(v, 20, 1);
  printf("own kernel before dlopen=%d\n", own_kernel(1));
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen failed\n");
    return 3;
  }
  scale_sum_fn scale_sum = (scale_sum_fn)dlsym(h, "kernels_scale_sum");
  count_fn count_call = (count_fn)dlsym(h, "kernels_count_call");
  count_fn on_device = (count_fn)dlsym(h, "kernels_on_device");
  if (!scale_sum || !count_call || !on_device) {
    printf("dlsym failed\n");
    return 4;
  }
  int s = scale_sum(v, 20, 3);
  int c1 = count_call();
  int c2 = count_call();
  printf("dlopened: sum=%d calls=%d,%d on_device=%d checksum=%lu\n", s, c1, c2,
         on_device(), helpers_checksum(v, 20));
  printf("own kernel while both loaded=%d\n", own_kernel(2));
  if (dlclose(h) != 0) {
    printf("dlclose failed\n");
    return 5;
  }
  printf("own kernel after dlclose=%d\n", own_kernel(3));
  return (s == 630 && c2 == 2) ? 0 : 1;
}
