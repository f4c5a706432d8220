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
 * The work is bounded by counts, never by time. Each cycle of the main
 * thread has two phases: its dlopen (with the region) and its dlclose.
 * The main thread announces each and waits until thread A has seen it; A
 * then starts at most REGIONS_PER_PHASE regions, so they begin before the
 * registration and before the unregistration, whatever the scheduler
 * does, and waits for the next phase. The main thread's first cycle waits
 * for A's first region, so `own_regions` is never 0. */
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CYCLES 150 /* argv[2] may ask for fewer (valgrind runs) */
#define REGIONS_PER_PHASE 4

static atomic_int stop;
static atomic_int phase; /* 2c: cycle c's dlopen; 2c+1: its dlclose */
static atomic_int ack = -1; /* the phase the busy thread's calls are in */
static atomic_long own_regions;
static atomic_long own_wrong;
static int devices;

/* Waits until the main thread starts another phase or stops. */
static void wait_for_next_phase(int seen) {
  const struct timespec pause = {0, 100000};
  while (atomic_load(&phase) == seen && !atomic_load(&stop))
    nanosleep(&pause, NULL);
}

static void *own_offloads(void *arg) {
  (void)arg;
  int seen = -1, in_phase = 0;
  for (int it = 0; !atomic_load(&stop); it++) {
    int now = atomic_load(&phase);
    if (now != seen) {
      seen = now;
      in_phase = 0;
      /* The main thread waits for this before its dlopen or dlclose, so
         this phase's calls start before that, not after. */
      atomic_store(&ack, now);
    }
    if (in_phase++ == REGIONS_PER_PHASE) {
      wait_for_next_phase(seen);
      continue;
    }
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

/* Announces phase p and waits until the busy thread has seen it (its
   first call of the phase is about to start): a count, not a clock. */
static void enter_phase(int p) {
  const struct timespec pause = {0, 100000};
  atomic_store(&phase, p);
  while (atomic_load(&ack) != p)
    nanosleep(&pause, NULL);
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
  const struct timespec pause = {0, 100000};
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
      nanosleep(&pause, NULL);
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("cycles=%d\n", cycles);
  printf("lib_wrong=%d\n", wrong);
  printf("own_regions=%ld\n", atomic_load(&own_regions));
  printf("own_wrong=%ld\n", atomic_load(&own_wrong));
  return 0;
}
