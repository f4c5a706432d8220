/* No target region here (nothing of this program registers with the
 * offload runtime): argv[1] is an offload shared object that this program
 * dlopens, calls and dlcloses, argv[2] times. Its registration is then the
 * only one, and each dlclose unregisters the last library: its image is
 * unloaded, the runtime (plugins, devices) stays until exit, as LLVM's, and
 * the next dlopen loads the image again on the same devices.
 *
 * The program first dlopens libomptarget.so itself and keeps it until the
 * end, so every cycle runs in the same instance of the runtime library. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s offload.so cycles\n", argv[0]);
    return 2;
  }
  void *runtime = dlopen("libomptarget.so", RTLD_NOW | RTLD_LOCAL);
  if (!runtime) {
    fprintf(stderr, "dlopen libomptarget.so: %s\n", dlerror());
    return 2;
  }
  int cycles = atoi(argv[2]);
  for (int c = 0; c < cycles; c++) {
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
      return 2;
    }
    int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
    if (!offload_sum) {
      fprintf(stderr, "dlsym offload_sum: %s\n", dlerror());
      return 2;
    }
    int n = 100 + c;
    printf("cycle%d=%d\n", c, offload_sum(n, 0));
    fflush(stdout);
    if (dlclose(lib) != 0) {
      fprintf(stderr, "dlclose: %s\n", dlerror());
      return 3;
    }
  }
  dlclose(runtime);
  return 0;
}
