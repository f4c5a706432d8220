// The main job's offload program: an ordinary clang-14 OpenMP offload
// program, run by `cargo xtask demo` on this project's libomptarget.so.
// It maps two vectors, runs SAXPY and a reduction in target regions on every
// device, and checks the results on the host.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

int main(void) {
  float *x = malloc(N * sizeof(float));
  float *y = malloc(N * sizeof(float));
  const float a = 2.5f;
  int devices = omp_get_num_devices();
  int failures = 0;
  printf("devices: %d (initial device %d)\n", devices, omp_get_initial_device());

  for (int dev = 0; dev < devices; dev++) {
    for (int i = 0; i < N; i++) {
      x[i] = (float)(i % 1000);
      y[i] = 1.0f;
    }
    double sum = 0.0;
#pragma omp target data map(to : x[0:N]) map(tofrom : y[0:N]) device(dev)
    {
#pragma omp target teams distribute parallel for device(dev)
      for (int i = 0; i < N; i++)
        y[i] = a * x[i] + y[i];
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum) device(dev)
      for (int i = 0; i < N; i++)
        sum += y[i];
    }
    double expect = 0.0;
    for (int i = 0; i < N; i++)
      expect += a * (float)(i % 1000) + 1.0f;
    int wrong = 0;
    for (int i = 0; i < N; i++)
      if (y[i] != a * (float)(i % 1000) + 1.0f)
        wrong++;
    printf("device %d: saxpy over %d elements, %d wrong; sum %.1f (expected %.1f)\n", dev, N, wrong, sum, expect);
    failures += wrong != 0 || sum != expect;
  }
  free(x);
  free(y);
  printf("%s\n", failures ? "FAILED" : "ok");
  fflush(stdout); // before the runtime prints its shutdown report at exit
  return failures != 0;
}
