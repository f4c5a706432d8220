/* One thread runs omp_target_alloc / omp_target_memcpy host->device /
 * omp_target_memcpy device->host (checked) / omp_target_free on device 0
 * while the main thread dlopens, calls (offload_sum: one target region)
 * and dlcloses the only offload library (argv[1]) CYCLES times. Each
 * dlclose is the last unregistration of a library that is not the main
 * program: its images leave the devices while the copying thread's calls
 * go on, and the runtime stays (it is torn down at exit). The first
 * dlopen builds the runtime from the library's constructor, under the
 * dynamic loader's lock, while the copying thread may be inside a call
 * that began before: that call must find the device the registry numbers
 * meanwhile (it once got null from omp_target_alloc). Prints `cycles=`,
 * `wrong=` (offload_sum results),
 * `copies=` (checked round trips), `copy_wrong=` (round trips that failed
 * after a successful allocation).
 *
 * The copying thread starts at most COPIES_PER_PHASE round trips (each
 * may start a runtime, which loads every plugin) in each phase of the
 * main thread, before its dlopen and before its dlclose (edge_phases.h).
 * The main thread's first cycle waits for the first round trip to end,
 * so `copies` is 0 only if every round trip failed (`copy_wrong`,
 * `alloc_failed`). */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge_phases.h"

#define CYCLES 300 /* argv[2] may ask for fewer (valgrind runs) */
#define WORDS 16
#define COPIES_PER_PHASE 3

static atomic_long copies;
static atomic_long copy_wrong;
static atomic_long alloc_failed;

static void *copy_loop(void *arg) {
  (void)arg;
  int host = omp_get_initial_device();
  int out[WORDS], back[WORDS];
  struct phase_budget budget = PHASE_BUDGET_INIT;
  for (long it = 0; !atomic_load(&stop); it++) {
    if (!phase_turn(&budget, COPIES_PER_PHASE))
      continue;
    int *p = omp_target_alloc(sizeof out, 0);
    if (!p) {
      atomic_fetch_add(&alloc_failed, 1);
      continue;
    }
    for (int i = 0; i < WORDS; i++)
      out[i] = (int)(it * WORDS + i);
    memset(back, 0xff, sizeof back);
    if (omp_target_memcpy(p, out, sizeof out, 0, 0, 0, host) != 0 ||
        omp_target_memcpy(back, p, sizeof back, 0, 0, host, 0) != 0 ||
        memcmp(out, back, sizeof out) != 0)
      atomic_fetch_add(&copy_wrong, 1);
    else
      atomic_fetch_add(&copies, 1);
    omp_target_free(p, 0);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    return 2;
  int cycles = argc == 3 ? atoi(argv[2]) : CYCLES;
  pthread_t thread;
  if (pthread_create(&thread, NULL, copy_loop, NULL) != 0)
    return 2;
  int wrong = 0;
  for (int c = 0; c < cycles; c++) {
    enter_phase(2 * c);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return 2;
    int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
    if (!offload_sum || offload_sum(10, 0) != 55)
      wrong++;
    enter_phase(2 * c + 1);
    dlclose(lib);
    while (c == 0 && atomic_load(&copies) + atomic_load(&copy_wrong) +
                             atomic_load(&alloc_failed) ==
                         0)
      short_pause();
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("cycles=%d\n", cycles);
  printf("wrong=%d\n", wrong);
  printf("copies=%ld\n", atomic_load(&copies));
  printf("copy_wrong=%ld\n", atomic_load(&copy_wrong));
  printf("alloc_failed=%ld\n", atomic_load(&alloc_failed));
  return 0;
}
