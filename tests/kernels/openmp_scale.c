/* A kernel built with -fopenmp (`cc -shared -fPIC -fopenmp`): the host
 * plugin calls it once per launch, on the calling thread, and its own
 * pragmas start the OpenMP runtime's threads inside that call. */
#include <omp.h>
#include <stddef.h>
#include <stdint.h>

/* Calls so far: one per launch, whatever the launch asked for. */
int32_t openmp_calls = 0;

/* y[i] = a * x[i] below both lengths, the loop shared by the threads of
 * one parallel region; threads[0] = how many that region had. */
void openmp_scale(float a, const float *x, size_t nx, float *y, size_t ny,
                  int32_t *threads, size_t nthreads) {
  size_t n = nx < ny ? nx : ny;
  int used = 0;
  ++openmp_calls;
#pragma omp parallel
  {
#pragma omp single
    used = omp_get_num_threads();
#pragma omp for
    for (size_t i = 0; i < n; ++i)
      y[i] = a * x[i];
  }
  if (nthreads > 0)
    threads[0] = used;
}
