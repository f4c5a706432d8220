/* No target region here. argv[1] is an offload shared object; while it is
 * loaded (so devices exist) this program allocates a device block with
 * omp_target_alloc, then dlcloses the library (its unregister is the last
 * one) and only then frees the block. Under LLVM 14 the runtime and its
 * devices live until exit, so the free goes to device 0 and the program is
 * valid; it must not free the block twice or hand a device pointer to
 * the host's free(). */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc != 2)
    return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
  if (!offload_sum)
    return 2;
  printf("sum=%d\n", offload_sum(10, 0));
  void *block = omp_target_alloc(32, 0);
  printf("block=%s\n", block ? "allocated" : "null");
  dlclose(lib);
  omp_target_free(block, 0);
  printf("freed=yes\n");
  void *again = omp_target_alloc(32, 0);
  void *other = omp_target_alloc(32, 0);
  printf("distinct=%s\n", again != other ? "yes" : "no");
  return 0;
}
