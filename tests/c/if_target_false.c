// if(target: cond) with a false condition: the region runs on the host, on the
// host's data (no mapping is created).
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argv;
  int use_device = argc > 5; // false
  int a[4] = {1, 2, 3, 4};
  int where = -1;
#pragma omp target if (target : use_device) map(tofrom : a) map(from : where)
  {
    where = omp_is_initial_device();
    for (int i = 0; i < 4; i++)
      a[i] *= 2;
  }
  printf("ran on initial device=%d a=%d %d %d %d present=%d\n", where, a[0],
         a[1], a[2], a[3], omp_target_is_present(a, omp_get_default_device()));
  int where2 = -1;
#pragma omp target if (1) map(from : where2)
  where2 = omp_is_initial_device();
  printf("if(1): ran on initial device=%d\n", where2);
  return (where == 1 && where2 == 0 && a[3] == 8) ? 0 : 1;
}
