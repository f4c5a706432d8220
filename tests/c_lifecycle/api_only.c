/* Registers nothing (no target construct, so no __tgt_register_lib): it
 * only calls the device memory API, which creates the runtime lazily. No
 * unregister ever shuts that runtime down; the shim's finalizer must. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  int devices = omp_get_num_devices();
  int initial = omp_get_initial_device();
  void *host_block = omp_target_alloc(128, initial);
  void *bad = omp_target_alloc(128, initial + 1);
  omp_target_free(host_block, initial);
  printf("devices=%d\n", devices);
  printf("initial=%d\n", initial);
  printf("host_block=%s\n", host_block ? "allocated" : "null");
  printf("beyond_last_device=%s\n", bad ? "allocated" : "null");
  return 0;
}
