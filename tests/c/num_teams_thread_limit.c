// num_teams and thread_limit clauses: the runtime may give fewer teams or
// threads than requested (it depends on the machine), never more; results of
// the distributed loop must not depend on the count. Prints only facts that
// hold on any machine.
#include <omp.h>
#include <stdio.h>

#define N 256

int main(void) {
  int out[N];
  int teams_ok = 1, threads_ok = 1;
#pragma omp target teams num_teams(2) thread_limit(2) map(from : out) \
    map(tofrom : teams_ok, threads_ok)
  {
    if (omp_get_num_teams() > 2 || omp_get_team_num() >= omp_get_num_teams())
      teams_ok = 0;
#pragma omp distribute parallel for
    for (int i = 0; i < N; i++) {
      out[i] = 3 * i;
      if (omp_get_num_threads() > 2)
        threads_ok = 0;
    }
  }
  long s = 0;
  for (int i = 0; i < N; i++)
    s += out[i];
  printf("sum=%ld teams_ok=%d threads_ok=%d\n", s, teams_ok, threads_ok);
  return (s == 97920 && teams_ok && threads_ok) ? 0 : 1;
}
