// What clang 16+ pass in __tgt_target_kernel's argument block, on every
// release: 20 kernel arguments (past the runtime's 16 inline ones, and
// clang 19+'s implicit dyn_ptr before them), scalars of every width as
// firstprivate literals, num_teams/thread_limit, a teams loop whose trip
// count the block carries, and a nowait region completed by taskwait.
#include <omp.h>
#include <stdio.h>

int main(void) {
  char c = 3;
  short s = -7;
  int i1 = 11, i2 = 12, i3 = 13, i4 = 14, i5 = 15, i6 = 16;
  long l = 1L << 40;
  float f = 1.5f;
  double d = -2.25;
  int a[8], b[8], out[8];
  for (int i = 0; i < 8; i++) {
    a[i] = i;
    b[i] = 10 * i;
    out[i] = 0;
  }
  long total = 0;
  int w1 = 1, w2 = 2, w3 = 3, w4 = 4, w5 = 5, w6 = 6;
#pragma omp target map(to : a, b) map(from : out) map(tofrom : total)
  {
    for (int i = 0; i < 8; i++)
      out[i] = a[i] + b[i] + c + s;
    total = c + s + i1 + i2 + i3 + i4 + i5 + i6 + (long)(f * 2) + (long)(d * 4) +
            (l >> 40) + w1 + w2 + w3 + w4 + w5 + w6;
  }
  printf("20 arguments: total=%ld out[0]=%d out[7]=%d\n", total, out[0], out[7]);
  int n = 1000;
  long sum = 0;
#pragma omp target teams distribute parallel for num_teams(3) thread_limit(2) \
    reduction(+ : sum) map(tofrom : sum)
  for (int i = 0; i < n; i++)
    sum += i;
  printf("teams loop over %d: sum=%ld\n", n, sum);
  int teams_seen = 0;
#pragma omp target teams num_teams(2) map(tofrom : teams_seen)
  {
    if (omp_get_team_num() == 0)
      teams_seen = omp_get_num_teams() >= 1;
  }
  printf("teams region ran=%d\n", teams_seen);
  int late = 0;
#pragma omp target map(tofrom : late) nowait
  late = 42;
#pragma omp taskwait
  printf("nowait region done after taskwait: %d\n", late);
  return total == 3 - 7 + 81 + 3 - 9 + 1 + 21 && sum == 499500 && late == 42 ? 0 : 1;
}
