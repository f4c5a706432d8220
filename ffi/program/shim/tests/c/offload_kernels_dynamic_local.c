// A kernel of dynamic group memory (an extern __gpu_local array placed at
// launch), which a host device has no form for: the object does not load.
#include <gpuintrin.h>
#include <stdint.h>

extern __gpu_local uint32_t dynamic[];

__gpu_kernel void uses_dynamic(uint32_t *out) {
  dynamic[__gpu_thread_id_x()] = 1;
  out[0] = dynamic[0];
}
