// Host kernels written as GPU kernels, against gpuintrin.h for host
// devices (ffi/program/shim/include/host-device): built with that folder
// on the include path, loaded by offload_groups.c on a host device.
#include <gpuintrin.h>
#include <stdint.h>

// Each item writes its ids at its place in the launch.
__gpu_kernel void ids(uint32_t *out) {
  uint32_t group = __gpu_block_id_x() +
                   __gpu_num_blocks_x() * (__gpu_block_id_y() +
                                           __gpu_num_blocks_y() *
                                               __gpu_block_id_z());
  uint32_t items = __gpu_num_threads_x() * __gpu_num_threads_y() *
                   __gpu_num_threads_z();
  uint32_t item = __gpu_thread_id_x() +
                  __gpu_num_threads_x() * (__gpu_thread_id_y() +
                                           __gpu_num_threads_y() *
                                               __gpu_thread_id_z());
  out[group * items + item] = group * 1000 + item;
}

// The group's memory: one group's at a time.
__gpu_local uint32_t partial[1024];

// Each group sums its slice of `in` into out[group], through its memory
// and a barrier: item 0 adds what every item of its group wrote.
__gpu_kernel void group_sum(const uint32_t *in, uint32_t *out) {
  uint32_t n = __gpu_num_threads_x();
  uint32_t me = __gpu_thread_id_x();
  partial[me] = in[__gpu_block_id_x() * n + me];
  __gpu_sync_threads();
  if (me == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
      sum += partial[i];
    out[__gpu_block_id_x()] = sum;
  }
  // No item of the next group may overwrite `partial` before item 0 read
  // it: the group ends when every item returns.
}

// One lane per warp.
__gpu_kernel void lanes(uint32_t *out) {
  out[__gpu_thread_id_x()] =
      __gpu_num_lanes() * 100 + __gpu_lane_id() * 10 +
      (uint32_t)__gpu_ballot(__gpu_lane_mask(), 1);
}

// Items from `n` on return at once, as a kernel that guards its range
// does; the rest meet at the barrier, which the returned ones do not hold
// back.
__gpu_kernel void guarded_sum(const uint32_t *in, uint32_t *out, uint32_t n) {
  uint32_t me = __gpu_thread_id_x();
  if (me >= n)
    return;
  partial[me] = in[me];
  __gpu_sync_threads();
  if (me == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
      sum += partial[i];
    out[0] = sum;
  }
  __gpu_sync_threads();
}

// More arguments than a launch passes from its stack (16): 17 slots.
__gpu_kernel void sum17(uint64_t *out, uint64_t a1, uint64_t a2, uint64_t a3,
                        uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                        uint64_t a8, uint64_t a9, uint64_t a10, uint64_t a11,
                        uint64_t a12, uint64_t a13, uint64_t a14, uint64_t a15,
                        uint64_t a16) {
  out[__gpu_thread_id_x()] = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 +
                             a10 + a11 + a12 + a13 + a14 + a15 + a16;
}
