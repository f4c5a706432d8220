// exit(5) from inside a `single` while `target nowait` kernels run: 64
// deferred regions over the host devices, each mapping a value back and
// spinning for SPIN seconds (argv[1], default 0.2), and the exit comes
// once the first kernels have started, before any taskwait. libomp's
// finaliser, run by the exit, waits for the hidden helper threads that run
// the kernels; each of those, once its kernel returns, copies back on a
// runtime the exit closed under it and must end quietly (neither park nor
// abort), so the process ends with status 5 within the time the running
// kernels need. (Our runtime used to park such a thread: a hang for ever
// in about 1 run of 6; LLVM 14 aborts with a fatal error.)
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TASKS 64

static atomic_int started;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  double spin = argc > 1 ? atof(argv[1]) : 0.2;
  int devices = omp_get_num_devices();
  if (devices < 1)
    return 2;
  static int out[TASKS];
  // The flag's host address, passed as is: host devices share the
  // program's address space, so main sees the kernels' increments.
  atomic_int *flag = &started;
#pragma omp parallel num_threads(4)
#pragma omp single
  {
    for (int t = 0; t < TASKS; t++) {
#pragma omp target device(t % devices) map(from : out[t : 1]) is_device_ptr(flag) firstprivate(spin) nowait
      {
        atomic_fetch_add(flag, 1);
        double until = now() + spin;
        while (now() < until)
          ;
        out[t] = t;
      }
    }
    printf("tasks_created=%d\n", TASKS);
    fflush(stdout);
    while (atomic_load(&started) == 0)
      usleep(100);
    exit(5);
  }
  return 0;
}
