/* One thread calls omp_get_num_devices() in a loop (or, with argv[2] =
 * "alloc", allocates and frees device memory on device 0) while the main
 * thread dlopens, uses and dlcloses an offload library (argv[1]) CYCLES
 * times.
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
static atomic_int allocated;

static void *query_devices(void *arg) {
  (void)arg;
  while (!atomic_load(&stop))
    (void)omp_get_num_devices();
  return NULL;
}

/* A block taken while a shutdown is being decided must stay valid until
 * this thread frees it: the runtime must not free it as a leftover. */
static void *alloc_and_free(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    int *p = omp_target_alloc(64, 0);
    if (p) {
      atomic_fetch_add(&allocated, 1);
      omp_target_free(p, 0);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    return 2;
  int alloc_mode = argc == 3 && argv[2][0] == 'a';
  pthread_t thread;
  if (pthread_create(&thread, NULL, alloc_mode ? alloc_and_free : query_devices, NULL) != 0)
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
  if (alloc_mode)
    printf("allocated_some=%s\n", atomic_load(&allocated) > 0 ? "yes" : "no");
  printf("wrong=%d\n", wrong);
  return 0;
}
