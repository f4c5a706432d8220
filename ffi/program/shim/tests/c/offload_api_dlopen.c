// liboffload (`ol*`) in a library the program dlopens and dlcloses: the
// program itself does not link our library, so each dlclose of the
// library that uses ol* (offload_api_user.c) unloads ours too, and the
// next dlopen starts a new session.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIB [ROUNDS]\n", argv[0]);
    return 2;
  }
  int rounds = argc > 2 ? atoi(argv[2]) : 2;
  for (int i = 0; i < rounds; i++) {
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 10;
    }
    int (*use)(void) = (int (*)(void))dlsym(handle, "use_offload");
    int status = use ? use() : 11;
    dlclose(handle);
    if (status) {
      fprintf(stderr, "use_offload failed at step %d (round %d)\n", status, i);
      return status;
    }
  }
  printf("rounds=%d\n", rounds);
  return 0;
}
