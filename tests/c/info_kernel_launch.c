// ENV: LIBOMPTARGET_INFO=17 OMP_NUM_TEAMS=3
// CHECK-STDERR
// CFLAGS: {debug}
// LIBOMPTARGET_INFO bit 0x10: the plugin's "Launching kernel" line, which
// LLVM 14's host plugin does not print. LLVM 19's host plugin prints the
// counts it computes for a kernel without a kernel environment (a "bare"
// one): num_teams and thread_limit as given, 1 otherwise (a plain target,
// a teams loop with a trip count, OMP_NUM_TEAMS); LLVM 22's treats host
// kernels as generic ones capped at one team of one thread and prints
// each count in three dimensions. Bit 0x1 adds the argument lists, whose
// data-region names differ too (LLVM 19/22 name the entry point, a
// `nowait` one included).
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 0, sum = 0;
  int a[100] = {0};
#pragma omp target map(tofrom : x)
  x += 1;
#pragma omp target teams map(tofrom : x)
  x += 1;
#pragma omp target teams num_teams(10) thread_limit(64) map(tofrom : x)
  {
    if (omp_get_team_num() == 0)
      x += 1;
  }
#pragma omp target teams distribute map(tofrom : a)
  for (int i = 0; i < 100; i++)
    a[i] += 1;
#pragma omp target teams distribute parallel for thread_limit(4) map(tofrom : a)
  for (int i = 0; i < 50; i++)
    a[i] += 1;
#pragma omp target enter data map(to : x) nowait
#pragma omp taskwait
#pragma omp target update from(x) nowait
#pragma omp taskwait
#pragma omp target exit data map(release : x) nowait
#pragma omp taskwait
  for (int i = 0; i < 100; i++)
    sum += a[i];
  printf("sum=%d\n", sum);
  return sum == 150 ? 0 : 1;
}
