// A one-way copy that fails on its server, then a library registered
// (dlopen: the plugin asks the server whether its devices can run the
// library's image, `CanRun`), then a region on that device: the copy's
// failure must reach the program at the region, not be taken as the
// answer to the question. argv[1]: the offload library to dlopen.
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int x = 5;
  // Small: a one-way copy, sent with the next request to the server.
#pragma omp target enter data map(to : x) device(0)
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  int y = 0;
#pragma omp target map(tofrom : y) device(0)
  { y = 1; }
  printf("y=%d\n", y);
  return 0;
}
