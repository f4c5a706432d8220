/* A library constructor registers (__tgt_register_lib, run by dlopen
 * under the dynamic loader's lock) while another thread's target region
 * is loading images (the host plugin dlopens each image it loads).
 * Thread A runs this program's own target regions on devices 0..D-1 in
 * turn, results checked; each registration of the library makes the next
 * region on every device load the new image first. Meanwhile the main
 * thread dlopens the offload library argv[1], runs its region on device
 * (cycle % D) and dlcloses it, CYCLES times, so loads and registrations
 * meet in both orders. Prints `devices=`, `cycles=`, `lib_wrong=`,
 * `own_regions=`, `own_wrong=`.
 *
 * Thread A starts at most REGIONS_PER_PHASE regions in each phase of the
 * main thread, before its dlopen and before its dlclose (edge_phases.h).
 * The main thread's first cycle waits for A's first region, so
 * `own_regions` is never 0. */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "edge_phases.h"

#define CYCLES 150 /* argv[2] may ask for fewer (valgrind runs) */
#define REGIONS_PER_PHASE 4

static atomic_long own_regions;
static atomic_long own_wrong;
static int devices;

static void *own_offloads(void *arg) {
  (void)arg;
  struct phase_budget budget = PHASE_BUDGET_INIT;
  for (int it = 0; !atomic_load(&stop); it++) {
    if (!phase_turn(&budget, REGIONS_PER_PHASE))
      continue;
    int device = it % devices;
    int x = it;
#pragma omp target device(device) map(tofrom : x)
    x = x * 2 + 1;
    if (x != it * 2 + 1)
      atomic_fetch_add(&own_wrong, 1);
    atomic_fetch_add(&own_regions, 1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3)
    return 2;
  int cycles = argc == 3 ? atoi(argv[2]) : CYCLES;
  devices = omp_get_num_devices();
  printf("devices=%d\n", devices);
  fflush(stdout);
  if (devices < 1)
    return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, own_offloads, NULL) != 0)
    return 2;
  int wrong = 0;
  for (int c = 0; c < cycles; c++) {
    enter_phase(2 * c);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return 2;
    int (*offload_sum)(int, int) = (int (*)(int, int))dlsym(lib, "offload_sum");
    if (!offload_sum || offload_sum(10, c % devices) != 55)
      wrong++;
    enter_phase(2 * c + 1);
    dlclose(lib);
    while (c == 0 && atomic_load(&own_regions) == 0)
      short_pause();
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("cycles=%d\n", cycles);
  printf("lib_wrong=%d\n", wrong);
  printf("own_regions=%ld\n", atomic_load(&own_regions));
  printf("own_wrong=%ld\n", atomic_load(&own_wrong));
  return 0;
}
