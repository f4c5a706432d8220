/* API calls after the only offload library (argv[1]) is dlclosed. This
 * program has no offload code of its own. It dlopens the library, runs
 * its region (offload_sum), takes a block with omp_target_alloc(64, 0)
 * and writes to it through omp_target_memcpy, dlcloses the library (the
 * last unregistration), then asks omp_get_num_devices() again and frees
 * the block. Prints `devices_before=`, `sum=`, `allocated=0|1`,
 * `devices_after=`, `memcpy_after=0|1` (0: a copy back from the block
 * after the dlclose gave the words written before it) and `freed=1`.
 * With argv[2] = "noblock", no block is held across the dlclose; a new one
 * is allocated, copied to and back (`roundtrip_after=0|1`, 0: right) and
 * freed after it instead. */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    return 2;
  int noblock = argc == 3 && strcmp(argv[2], "noblock") == 0;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 2;
  int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
  if (!offload_sum)
    return 2;
  printf("devices_before=%d\n", omp_get_num_devices());
  printf("sum=%d\n", offload_sum(10, 0));
  int host = omp_get_initial_device();
  int words[16] = {0}, back[16] = {0};
  for (int i = 0; i < 16; i++)
    words[i] = i * 3;
  void *block = noblock ? NULL : omp_target_alloc(sizeof words, 0);
  if (!noblock)
    printf("allocated=%d\n", block != NULL);
  if (block)
    (void)omp_target_memcpy(block, words, sizeof words, 0, 0, 0, host);
  fflush(stdout);
  dlclose(lib);
  printf("devices_after=%d\n", omp_get_num_devices());
  if (block) {
    int rc = omp_target_memcpy(back, block, sizeof back, 0, 0, host, 0);
    int same = 1;
    for (int i = 0; i < 16; i++)
      same &= back[i] == words[i];
    printf("memcpy_after=%d\n", rc == 0 && same ? 0 : 1);
    omp_target_free(block, 0);
  }
  if (noblock) {
    void *fresh = omp_target_alloc(sizeof words, 0);
    int ok = fresh != NULL &&
             omp_target_memcpy(fresh, words, sizeof words, 0, 0, 0, host) == 0 &&
             omp_target_memcpy(back, fresh, sizeof back, 0, 0, host, 0) == 0 &&
             memcmp(back, words, sizeof back) == 0;
    printf("roundtrip_after=%d\n", ok ? 0 : 1);
    if (fresh)
      omp_target_free(fresh, 0);
  }
  printf("freed=1\n");
  return 0;
}
