/* One thread calls omp_get_num_devices() in a loop while the main thread
 * dlopens, uses and dlcloses an offload library (argv[1]) CYCLES times.
 * Each dlclose shuts the runtime down and the other thread's next call
 * creates a new one, while the next dlopen registers the library from its
 * constructor, under the dynamic loader's lock. Must finish, with every
 * result right. */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define CYCLES 50

static atomic_int stop;

static void *query_devices(void *arg) {
  (void)arg;
  while (!atomic_load(&stop))
    (void)omp_get_num_devices();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, query_devices, NULL) != 0)
    return 2;
  int wrong = 0;
  for (int c = 0; c < CYCLES; c++) {
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return 2;
    int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
    if (!offload_sum || offload_sum(10, 0) != 55)
      wrong++;
    dlclose(lib);
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("cycles=%d\n", CYCLES);
  printf("wrong=%d\n", wrong);
  return 0;
}
