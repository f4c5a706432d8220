/* `device_images D`: one target region on device D, saying where it ran.
 * Prints `devices=N`, then `ran_on_device=1` when device D ran the region
 * and `value=` its result. A device that can run none of the program's
 * images has none registered: the region then fails, and as offloading
 * is mandatory while there are devices (LLVM's default), the runtime
 * ends the program with a fatal error naming the device. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int d = argc > 1 ? atoi(argv[1]) : 0;
  printf("devices=%d\n", omp_get_num_devices());
  fflush(stdout);
  int on_device = 0;
  int value = 0;
#pragma omp target device(d) map(from : on_device, value)
  {
    on_device = !omp_is_initial_device();
    value = 10 * d + 7;
  }
  printf("ran_on_device=%d\n", on_device);
  printf("value=%d\n", value);
  return 0;
}
