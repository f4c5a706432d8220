// exit(7) called inside one of 16 `target nowait` kernels while the others
// spin for SPIN seconds each (argv[1], default 0.2) on the host devices.
// The exiting kernel runs on one of libomp's hidden helper threads, from
// which libomp's finaliser cannot run (it waits for that thread's team):
// the process must end with status 7, with stdout flushed, and nothing
// after the taskwait may run. (Ours hung for ever in every run; LLVM 14,
// 19 and 22 end with SIGSEGV; plain libomp without offloading hangs.)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TASKS 16
#define EXITING 3

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
  // Left in stdio's buffer (stdout is a pipe): the exit must flush it.
  printf("before=1\n");
#pragma omp parallel num_threads(4)
#pragma omp single
  {
    for (int t = 0; t < TASKS; t++) {
#pragma omp target device(t % devices) map(from : out[t : 1]) firstprivate(spin, t) nowait
      {
        if (t == EXITING)
          exit(7);
        double until = now() + spin;
        while (now() < until)
          ;
        out[t] = t;
      }
    }
    // The exiting kernel may run before this line.
    printf("tasks_created=%d\n", TASKS);
#pragma omp taskwait
    printf("after_taskwait=1\n");
  }
  return 1;
}
