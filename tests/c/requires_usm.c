// #pragma omp requires unified_shared_memory: host pointers are used directly
// on the device, no copies are made, and omp_target_is_present reports 0 for
// host data (it has no separate device copy).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#pragma omp requires unified_shared_memory

int main(void) {
  int n = 8;
  int *v = malloc(n * sizeof *v);
  for (int i = 0; i < n; i++)
    v[i] = i;
  int same_address = -1;
  int *host_v = v;
#pragma omp target map(tofrom : v[0 : n]) map(from : same_address)
  {
    same_address = v == host_v;
    for (int i = 0; i < n; i++)
      v[i] += 100;
  }
  int x = 5;
#pragma omp target enter data map(to : x)
  x = 6; // with USM the "device copy" is the host variable itself
  int seen = 0;
#pragma omp target map(from : seen)
  seen = x;
#pragma omp target exit data map(release : x)
  printf("same_address=%d v[7]=%d seen=%d is_present=%d\n", same_address, v[7],
         seen, omp_target_is_present(v, omp_get_default_device()));
  int ok = same_address == 1 && v[7] == 107 && seen == 6;
  free(v);
  return ok ? 0 : 1;
}
