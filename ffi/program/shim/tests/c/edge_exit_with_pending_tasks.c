// exit(4) from inside a `single` after creating 64 deferred target tasks
// (`target nowait`, each mapping its own row) and a deferred `target enter
// data nowait`, before any taskwait. libomp's finaliser, run by the exit,
// waits for the tasks its workers hold; the runtime, closed by the same
// exit, must let each task end (the region falls back to the host, the
// data directive does nothing), so the process ends with status 4 at once.
// (LLVM 14 and 22 segfault or abort here; our runtime used to hang.)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define TASKS 64
#define ROW 1024

static double rows[TASKS][ROW];
static double extra[ROW];

int main(void) {
#pragma omp parallel num_threads(4)
#pragma omp single
  {
    for (int t = 0; t < TASKS; t++) {
#pragma omp target map(tofrom : rows[t][0:ROW]) nowait
      for (int i = 0; i < ROW; i++)
        rows[t][i] += i;
    }
#pragma omp target enter data map(to : extra[0:ROW]) nowait
    printf("tasks_created=%d\n", TASKS);
    fflush(stdout);
    exit(4);
  }
  return 0;
}
