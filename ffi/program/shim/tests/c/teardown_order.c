/* Leaves work for the runtime's teardown at exit: a target region (its
 * buffers go back to the memory manager's cache), an array mapped with
 * `target enter data` and never unmapped (a user leak in the mapping
 * table), and an omp_target_alloc block never freed. The runtime must free
 * all of it through the plugin before unloading the image, deinitialising
 * the devices and the plugin. */
#include <omp.h>
#include <stdio.h>

#define N 16

static int leaked_array[8];

int main(void) {
  int a[N];
  int sum = 0;
  for (int i = 0; i < N; i++)
    a[i] = i + 1;

#pragma omp target device(0) map(to : a) map(tofrom : sum)
  for (int i = 0; i < N; i++)
    sum += a[i];

  for (int i = 0; i < 8; i++)
    leaked_array[i] = i;
#pragma omp target enter data device(0) map(to : leaked_array)

  void *never_freed = omp_target_alloc(64, 1);

  printf("sum=%d\n", sum);
  printf("present=%d\n", omp_target_is_present(leaked_array, 0));
  printf("mapped_host=%p\n", (void *)leaked_array);
  printf("mapped_size=%zu\n", sizeof leaked_array);
  printf("allocated=%p\n", never_freed);
  return never_freed ? 0 : 1;
}
