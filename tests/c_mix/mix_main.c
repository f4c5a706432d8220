// The program of tests/release_mix.rs: built by one clang, it offloads
// itself, dlopens mix_lib.c built by another clang (argv[1]), uses its
// kernels, and counts the libomptarget objects in the process (one: the
// library's libomptarget.so.22.1 or libomptarget.so is the same file).
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

static int count_runtimes(void) {
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[4096], seen[8][1024];
  int n = 0;
  while (maps && fgets(line, sizeof line, maps)) {
    char *path = strchr(line, '/');
    if (!path || !strstr(path, "libomptarget.so") || strstr(path, "rtl"))
      continue;
    path[strcspn(path, "\n")] = 0;
    int known = 0;
    for (int i = 0; i < n; i++)
      known |= strcmp(seen[i], path) == 0;
    if (!known && n < 8)
      strncpy(seen[n++], path, sizeof seen[0] - 1);
  }
  if (maps)
    fclose(maps);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 41;
  printf("main region: x=%d\n", x);
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("dlopen failed: %s\n", dlerror());
    return 3;
  }
  int (*sum)(int *, int) = (int (*)(int *, int))dlsym(lib, "mix_lib_sum");
  int (*bad)(void) = (int (*)(void))dlsym(lib, "mix_lib_bad_copy");
  int v[100];
  for (int i = 0; i < 100; i++)
    v[i] = i;
  printf("library kernels: %d then %d\n", sum(v, 100), sum(v, 10));
  printf("runtimes loaded: %d\n", count_runtimes());
  fflush(stdout);
  int rc_main = omp_target_memcpy(NULL, NULL, 4, 0, 0, 0, omp_get_initial_device());
  int rc_lib = bad();
  printf("bad copies: main rc=%d library rc=%d\n", rc_main, rc_lib);
#pragma omp target map(tofrom : x)
  x += 1;
  printf("main region after the library: x=%d\n", x);
  dlclose(lib);
  return 0;
}
