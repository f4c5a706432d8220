/* exit(3) from the main thread while 4 other threads offload in a loop
 * (target regions with mapped data, results checked). Once every worker
 * has run some regions, main prints `workers_running=1` and calls
 * exit(3): the process must end with status 3, whatever the workers were
 * doing in the runtime at that moment. A worker whose result is wrong
 * writes `wrong=<thread>` (unbuffered) and stops there (exit must stay
 * main's: exit() from two threads at once is undefined); main then exits
 * with status 4 at once instead of waiting for a warm-up that cannot
 * come. */
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WORKERS 4
#define N 512

static atomic_int warmed_up;
static atomic_int wrong_workers;

static void *worker(void *arg) {
  long t = (long)arg;
  int device = (int)(t % omp_get_num_devices());
  int a[N];
  for (long it = 0;; it++) {
    long s = 0;
    for (int i = 0; i < N; i++)
      a[i] = (int)(i + t + it);
#pragma omp target device(device) map(to : a[0 : N]) map(tofrom : s)
    for (int i = 0; i < N; i++)
      s += a[i];
    long want = (long)N * (N - 1) / 2 + (long)N * (t + it);
    if (s != want) {
      char line[32];
      int n = snprintf(line, sizeof line, "wrong=%ld\n", t);
      if (write(STDOUT_FILENO, line, (size_t)n) != n)
        abort();
      atomic_fetch_add(&wrong_workers, 1);
      for (;;)
        pause();
    }
    if (it == 20)
      atomic_fetch_add(&warmed_up, 1);
  }
  return NULL;
}

int main(void) {
  if (omp_get_num_devices() < 1)
    return 2;
  pthread_t threads[WORKERS];
  for (long t = 0; t < WORKERS; t++)
    if (pthread_create(&threads[t], NULL, worker, (void *)t) != 0)
      return 2;
  while (atomic_load(&warmed_up) < WORKERS && atomic_load(&wrong_workers) == 0)
    usleep(1000);
  if (atomic_load(&wrong_workers) != 0)
    exit(4);
  printf("workers_running=1\n");
  fflush(stdout);
  exit(3);
}
