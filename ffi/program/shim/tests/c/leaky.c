/* Leaks on purpose, for the leak report (compiled with -g): one
 * omp_target_alloc block never freed and one `target enter data` mapping
 * never released, each on a line marked LEAK_* that the test looks up.
 * Everything else is freed or unmapped. With the argument `clean` it leaks
 * nothing. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#define N 1000

static double kept[N];

static void *leak_a_block(int dev) {
  return omp_target_alloc(4096, dev); /* LEAK_ALLOC */
}

static void map_and_forget(int dev) {
#pragma omp target enter data map(to : kept) device(dev) /* LEAK_MAP */
}

int main(int argc, char **argv) {
  int clean = argc > 1 && strcmp(argv[1], "clean") == 0;
  int dev = 0;
  void *freed = omp_target_alloc(128, dev);
  omp_target_free(freed, dev);

  double sum = 0;
  for (int i = 0; i < N; i++)
    kept[i] = i;
#pragma omp target map(to : kept) map(tofrom : sum) device(dev)
  for (int i = 0; i < N; i++)
    sum += kept[i];

  void *lost = clean ? NULL : leak_a_block(dev);
  if (!clean)
    map_and_forget(dev);
  printf("sum=%.0f\n", sum);
  printf("lost=%p\n", lost);
  printf("kept=%p\n", (void *)kept);
  return 0;
}
