/* Run with a plugin that claims 2^30 devices, then one that has a device:
 * the first must be skipped with a message (LLVM 14 aborts allocating for
 * them), the second used, and the process must stay small. Prints
 * `<key>=<value>` lines. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

/* VmPeak from /proc/self/status, in kB (-1 if not found). */
static long vm_peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmPeak:", 7) == 0) sscanf(line + 7, "%ld", &kb);
  if (f) fclose(f);
  return kb;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int x = 1, on_host = -1;
#pragma omp target map(tofrom : x, on_host)
  {
    x += 41;
    on_host = omp_is_initial_device();
  }
  printf("devices=%d\n", omp_get_num_devices());
  printf("x=%d\n", x);
  printf("on_host=%d\n", on_host);
  printf("vm_peak_kb=%ld\n", vm_peak_kb());
  return x == 42 ? 0 : 1;
}
