/* THREADS pthreads each run ITERS target regions on device
 * (thread % devices), all at once, with their own data; every result is
 * checked against the host. Prints one `thread<t>=ok|<got>/<want>` line
 * per thread, `regions=<n>` and `result=ok|FAIL`. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 8
#define N 1000
#define ITERS 25

static long results[THREADS];
static pthread_barrier_t start;

static long expected(long t) {
  long want = 0;
  for (int it = 0; it < ITERS; it++)
    for (int i = 0; i < N; i++)
      want += i * (t + 1) + it;
  return want;
}

static void *worker(void *arg) {
  long t = (long)arg;
  int device = (int)(t % omp_get_num_devices());
  int a[N];
  long total = 0;
  pthread_barrier_wait(&start);
  for (int it = 0; it < ITERS; it++) {
    long s = 0;
    for (int i = 0; i < N; i++)
      a[i] = (int)(i * (t + 1) + it);
#pragma omp target device(device) map(to : a) map(tofrom : s)
    for (int i = 0; i < N; i++)
      s += a[i];
    total += s;
  }
  results[t] = total;
  return NULL;
}

int main(void) {
  pthread_t threads[THREADS];
  int devices = omp_get_num_devices();
  printf("devices=%d\n", devices);
  if (devices < 1)
    return 1;
  pthread_barrier_init(&start, NULL, THREADS);
  for (long t = 0; t < THREADS; t++)
    if (pthread_create(&threads[t], NULL, worker, (void *)t) != 0)
      return 1;
  for (int t = 0; t < THREADS; t++)
    pthread_join(threads[t], NULL);
  int bad = 0;
  for (long t = 0; t < THREADS; t++) {
    long want = expected(t);
    if (results[t] == want) {
      printf("thread%ld=ok\n", t);
    } else {
      printf("thread%ld=%ld/%ld\n", t, results[t], want);
      bad = 1;
    }
  }
  printf("regions=%d\n", THREADS * ITERS);
  printf("result=%s\n", bad ? "FAIL" : "ok");
  return bad;
}
