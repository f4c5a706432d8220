// The OpenMP program of scripts/gpu-check.sh: SPMD, reduction and generic
// kernels, a declare-target global, target update, omp_target_alloc and
// memcpy, nowait. Every printed value is an exact integer, so the GPU run
// and the host-fallback run (OMP_TARGET_OFFLOAD=DISABLED) must print the
// same lines; lines starting with '#' say where it ran and are not compared.
//
// usage: offload_check [leak]   (leak: exit with device memory still allocated)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma omp declare target
long bias = 3;
#pragma omp end declare target

#define N (1 << 20)

int main(int argc, char **argv) {
  long *x = malloc(N * sizeof(long)), *y = malloc(N * sizeof(long));
  for (int i = 0; i < N; i++) {
    x[i] = i % 1000;
    y[i] = 1;
  }
  int initial = -1;
#pragma omp target map(from : initial)
  initial = omp_is_initial_device();
  printf("# ran on the initial device: %d (devices: %d)\n", initial, omp_get_num_devices());

  // SPMD: target teams distribute parallel for.
#pragma omp target teams distribute parallel for map(to : x[0:N]) map(tofrom : y[0:N])
  for (int i = 0; i < N; i++)
    y[i] = 3 * x[i] + y[i] + bias;
  long check = 0;
  for (int i = 0; i < N; i++)
    check += y[i] != 3 * (i % 1000) + 1 + 3;
  printf("saxpy wrong: %ld, y[12345] = %ld\n", check, y[12345]);

  // A cross-team reduction (clang 19/22: the launch environment's buffer).
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : y[0:N])
  for (int i = 0; i < N; i++)
    sum += y[i];
  printf("reduction: %ld\n", sum);

  // Generic mode: teams distribute with a nested parallel for.
  long rows[64];
#pragma omp target teams distribute map(from : rows)
  for (int r = 0; r < 64; r++) {
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int c = 0; c < 1000; c++)
      s += (long)r * c;
    rows[r] = s;
  }
  long rsum = 0;
  for (int r = 0; r < 64; r++)
    rsum += rows[r] % 1000003;
  printf("generic rows: %ld %ld %ld\n", rows[1], rows[63], rsum);

  // A declare-target global, updated from the host.
  bias = 5;
#pragma omp target update to(bias)
  long twice = 0;
#pragma omp target map(from : twice)
  twice = bias * 2;
  printf("global: %ld\n", twice);

  // omp_target_alloc / memcpy round trip.
  int dev = omp_get_default_device(), host = omp_get_initial_device();
  if (initial)
    dev = host;
  long *d = omp_target_alloc(N * sizeof(long), dev);
  int rc = omp_target_memcpy(d, x, N * sizeof(long), 0, 0, dev, host);
  memset(y, 0, N * sizeof(long));
  rc |= omp_target_memcpy(y, d, N * sizeof(long), 0, 0, host, dev);
  printf("memcpy rc %d, equal %d\n", rc, memcmp(x, y, N * sizeof(long)) == 0);

  // Two nowait regions, then a taskwait.
  long a = 0, b = 0;
#pragma omp target map(tofrom : a) nowait
  a = 40;
#pragma omp target map(tofrom : b) nowait
  b = 2;
#pragma omp taskwait
  printf("nowait: %ld\n", a + b);

  if (argc > 1 && !strcmp(argv[1], "leak")) {
    // The seed scenario: exit with device memory and a mapping still live.
    void *leak = omp_target_alloc(1 << 20, dev);
#pragma omp target enter data map(to : x[0:N])
    printf("# leaving %p allocated\n", leak);
    fflush(stdout);
    exit(0);
  }
  omp_target_free(d, dev);
  free(x);
  free(y);
  return 0;
}
