// Unstructured mapping with target enter data / target exit data: data stays
// on the device across several target regions.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 100;
  int *v = malloc(n * sizeof *v);
  for (int i = 0; i < n; i++)
    v[i] = i;
#pragma omp target enter data map(to : v[0 : n])
  printf("present after enter=%d\n",
         omp_target_is_present(v, omp_get_default_device()));
  for (int round = 0; round < 3; round++) {
#pragma omp target
    for (int i = 0; i < n; i++)
      v[i] += 1;
  }
  printf("host v[0] before exit=%d\n", v[0]);
#pragma omp target exit data map(from : v[0 : n])
  printf("present after exit=%d\n",
         omp_target_is_present(v, omp_get_default_device()));
  long sum = 0;
  for (int i = 0; i < n; i++)
    sum += v[i];
  printf("v[0]=%d v[99]=%d sum=%ld\n", v[0], v[n - 1], sum);
  free(v);
  return sum == 5250 ? 0 : 1;
}
