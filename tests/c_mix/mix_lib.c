// The library of tests/release_mix.rs, built by one clang (14 or 22) and
// dlopened by a program built by the other: its own offload image and
// entry table (32-byte or 56-byte), a declare target global, a kernel, and
// one diagnostic printed in its own release's wording.
#include <omp.h>
#include <stddef.h>

#pragma omp declare target
int mix_lib_calls = 0;
#pragma omp end declare target

int mix_lib_sum(int *v, int n) {
  long sum = 0;
#pragma omp target teams distribute parallel for map(to : v[0 : n])            \
    reduction(+ : sum)
  for (int i = 0; i < n; i++)
    sum += v[i];
  int calls = 0;
#pragma omp target map(from : calls)
  calls = ++mix_lib_calls;
  return (int)sum * 10 + calls;
}

// NULL with a length: the runtime refuses with an error line.
int mix_lib_bad_copy(void) {
  return omp_target_memcpy(NULL, NULL, 4, 0, 0, 0, omp_get_initial_device());
}
