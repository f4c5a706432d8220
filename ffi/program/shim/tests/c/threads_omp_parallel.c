/* An `omp parallel` of THREADS host threads; each runs target regions on
 * device (thread % devices) with `target enter/exit data` around them and
 * a `target update` in between, all concurrently. Results are checked
 * against the host. Prints `regions=<n>` and `result=ok|FAIL`. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define N 512
#define ITERS 10

int main(void) {
  int devices = omp_get_num_devices();
  printf("devices=%d\n", devices);
  if (devices < 1)
    return 1;
  int bad = 0;
  int ran = 0;
#pragma omp parallel num_threads(THREADS) reduction(+ : bad, ran)
  {
    int t = omp_get_thread_num();
    int device = t % devices;
    int *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
      v[i] = t;
#pragma omp target enter data device(device) map(to : v[0:N])
    for (int it = 0; it < ITERS; it++) {
#pragma omp target device(device) map(alloc : v[0:N])
      for (int i = 0; i < N; i++)
        v[i] += i;
      ran++;
    }
#pragma omp target update device(device) from(v[0:N])
    for (int i = 0; i < N; i++)
      if (v[i] != t + ITERS * i)
        bad++;
#pragma omp target exit data device(device) map(delete : v[0:N])
    free(v);
  }
  printf("regions=%d\n", ran);
  printf("result=%s\n", bad ? "FAIL" : "ok");
  return bad != 0;
}
