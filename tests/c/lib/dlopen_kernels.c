// Offload shared library loaded with dlopen() by static_lib_and_dlopen.c and
// dlopen_loop.c. It has its own offload image (registered with libomptarget
// from its constructor, unregistered from its destructor at dlclose), a
// declare target global and two kernels.
#include <omp.h>

#pragma omp declare target
int kernels_calls = 0;
#pragma omp end declare target

// Scales v[0:n] by factor on the default device and returns the sum.
int kernels_scale_sum(int *v, int n, int factor) {
  long sum = 0;
#pragma omp target teams distribute parallel for map(tofrom : v[0 : n]) \
    reduction(+ : sum)
  for (int i = 0; i < n; i++) {
    v[i] *= factor;
    sum += v[i];
  }
  return (int)sum;
}

// Increments the device copy of kernels_calls and returns the new value.
int kernels_count_call(void) {
  int r = 0;
#pragma omp target map(from : r)
  {
    kernels_calls += 1;
    r = kernels_calls;
  }
  return r;
}

// Whether the first kernel ran on a device rather than the host.
int kernels_on_device(void) {
  int initial = 1;
#pragma omp target map(from : initial)
  initial = omp_is_initial_device();
  return !initial;
}
