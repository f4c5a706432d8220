/* Registers nothing (no target construct, so no __tgt_register_lib): it
 * only calls the device memory API, which creates the runtime lazily. No
 * unregister ever shuts that runtime down; the shim's finalizer must.
 *
 * With the argument `unregister_unknown` it also hands
 * __tgt_unregister_lib a descriptor that was never registered, between
 * two API calls: that removes no library, so it must not shut down. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

void __tgt_unregister_lib(void *desc);

int main(int argc, char **argv) {
  int devices = omp_get_num_devices();
  if (argc > 1 && strcmp(argv[1], "unregister_unknown") == 0) {
    char never_registered[64];
    memset(never_registered, 0, sizeof never_registered);
    __tgt_unregister_lib(never_registered);
  }
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
