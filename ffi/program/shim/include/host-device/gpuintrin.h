/*
 * gpuintrin.h for the host (x86_64) devices of omptarget-rs.
 *
 * Clang's own gpuintrin.h has no x86_64 target. A kernel written against
 * it (`__gpu_kernel`, `__gpu_thread_id`, `__gpu_sync_threads`, ...) builds
 * for a host device with this folder first on the include path:
 *
 *   clang -shared -fPIC -I .../include/host-device kernel.c -o kernel.so
 *
 * and `olCreateProgram` loads the object on a host device. A kernel learns
 * its ids from the table the runtime gives each program it loads on a
 * host device of its process: this header defines the variable that
 * receives it, `__omptarget_host_gpu`, and the runtime writes it after
 * loading (docs/liboffload.md). Before that (in a constructor run at load)
 * and outside a launch, a kernel is item 0 of one group of one item.
 *
 * What a host device is, in GPU terms: a launch runs its groups one after
 * another and the items of a group at once, each on its own thread, so
 * `__gpu_sync_threads` is a barrier of the group's items still running
 * (one that returned holds no one back) and a `__gpu_local` variable (an
 * ordinary global here) is one group's at a time, within a launch: two
 * launches of one program at once share it. Each item is a warp of one lane: `__gpu_num_lanes()` is 1, and
 * the lane operations act on that one lane. Dynamic group memory (an
 * `extern __gpu_local` array sized at launch) has no host form: such an
 * object does not load (the array is an undefined symbol). `__gpu_exit`
 * is not offered: a host thread cannot end an item alone.
 */
#ifndef OMPTARGET_HOST_GPUINTRIN_H
#define OMPTARGET_HOST_GPUINTRIN_H

#if defined(__NVPTX__) || defined(__AMDGPU__) || defined(__SPIRV__)
#error "gpuintrin.h for host devices: a GPU build takes clang's own"
#endif

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the runtime answers a kernel (version 1; a new member goes last). */
struct __omptarget_host_gpu {
  uint32_t version;
  uint32_t (*num_blocks)(int dim);
  uint32_t (*block_id)(int dim);
  uint32_t (*num_threads)(int dim);
  uint32_t (*thread_id)(int dim);
  void (*sync_threads)(void);
};

/* Written by the runtime when it loads the program; one per object (weak:
 * each file that includes this header defines it, the link keeps one).
 * Protected: exported, so the runtime finds it, but the object's code
 * reads its own, whatever else in the process defines the name. */
__attribute__((weak, visibility("protected")))
const struct __omptarget_host_gpu *__omptarget_host_gpu;

#define __gpu_kernel __attribute__((visibility("default")))
#define __gpu_local
#define __gpu_constant
#define __gpu_private
#define __gpu_global
#define __gpu_generic

#define __GPU_X_DIM 0
#define __GPU_Y_DIM 1
#define __GPU_Z_DIM 2

#define __OMPTARGET_HOST_ASK(member, dim, outside)                             \
  (__omptarget_host_gpu ? __omptarget_host_gpu->member(dim) : (outside))

static __inline__ uint32_t __gpu_num_blocks(int __dim) {
  return __OMPTARGET_HOST_ASK(num_blocks, __dim, 1);
}
static __inline__ uint32_t __gpu_block_id(int __dim) {
  return __OMPTARGET_HOST_ASK(block_id, __dim, 0);
}
static __inline__ uint32_t __gpu_num_threads(int __dim) {
  return __OMPTARGET_HOST_ASK(num_threads, __dim, 1);
}
static __inline__ uint32_t __gpu_thread_id(int __dim) {
  return __OMPTARGET_HOST_ASK(thread_id, __dim, 0);
}

#define __OMPTARGET_HOST_XYZ(name)                                             \
  static __inline__ uint32_t name##_x(void) { return name(__GPU_X_DIM); }      \
  static __inline__ uint32_t name##_y(void) { return name(__GPU_Y_DIM); }      \
  static __inline__ uint32_t name##_z(void) { return name(__GPU_Z_DIM); }
__OMPTARGET_HOST_XYZ(__gpu_num_blocks)
__OMPTARGET_HOST_XYZ(__gpu_block_id)
__OMPTARGET_HOST_XYZ(__gpu_num_threads)
__OMPTARGET_HOST_XYZ(__gpu_thread_id)
#undef __OMPTARGET_HOST_XYZ

/* The group's barrier. */
static __inline__ void __gpu_sync_threads(void) {
  if (__omptarget_host_gpu)
    __omptarget_host_gpu->sync_threads();
}

/* Warps of one lane. */
static __inline__ uint32_t __gpu_num_lanes(void) { return 1; }
static __inline__ uint32_t __gpu_lane_id(void) { return 0; }
static __inline__ uint64_t __gpu_lane_mask(void) { return 1; }
static __inline__ uint64_t __gpu_first_lane_id(uint64_t __lane_mask) {
  return __lane_mask ? (uint64_t)__builtin_ctzll(__lane_mask) : (uint64_t)-1;
}
static __inline__ bool __gpu_is_first_in_lane(uint64_t __lane_mask) {
  return (__lane_mask & 1) != 0;
}
static __inline__ uint64_t __gpu_ballot(uint64_t __lane_mask, bool __x) {
  return __x ? (__lane_mask & 1) : 0;
}
static __inline__ void __gpu_sync_lane(uint64_t __lane_mask) {
  (void)__lane_mask;
}

/* With one lane, reading the first lane, shuffling, scanning and summing
 * give the lane's own value. */
#define __OMPTARGET_HOST_LANE_OPS(type, suffix)                                \
  static __inline__ type __gpu_read_first_lane_##suffix(uint64_t __m,          \
                                                          type __x) {          \
    (void)__m;                                                                 \
    return __x;                                                                \
  }                                                                            \
  static __inline__ type __gpu_shuffle_idx_##suffix(                           \
      uint64_t __m, uint32_t __idx, type __x, uint32_t __width) {              \
    (void)__m, (void)__idx, (void)__width;                                     \
    return __x;                                                                \
  }                                                                            \
  static __inline__ type __gpu_lane_scan_##suffix(uint64_t __m, type __x) {    \
    (void)__m;                                                                 \
    return __x;                                                                \
  }                                                                            \
  static __inline__ type __gpu_lane_sum_##suffix(uint64_t __m, type __x) {     \
    (void)__m;                                                                 \
    return __x;                                                                \
  }
__OMPTARGET_HOST_LANE_OPS(uint32_t, u32)
__OMPTARGET_HOST_LANE_OPS(uint64_t, u64)
__OMPTARGET_HOST_LANE_OPS(float, f32)
__OMPTARGET_HOST_LANE_OPS(double, f64)
#undef __OMPTARGET_HOST_LANE_OPS

#define __OMPTARGET_HOST_MATCH(type, suffix)                                   \
  static __inline__ uint64_t __gpu_match_any_##suffix(uint64_t __m, type __x) { \
    (void)__x;                                                                 \
    return __m & 1;                                                            \
  }                                                                            \
  static __inline__ uint64_t __gpu_match_all_##suffix(uint64_t __m, type __x) { \
    (void)__x;                                                                 \
    return __m & 1;                                                            \
  }
__OMPTARGET_HOST_MATCH(uint32_t, u32)
__OMPTARGET_HOST_MATCH(uint64_t, u64)
#undef __OMPTARGET_HOST_MATCH

/* Host memory is one space. */
static __inline__ bool __gpu_is_ptr_local(void *__ptr) {
  (void)__ptr;
  return 0;
}
static __inline__ bool __gpu_is_ptr_private(void *__ptr) {
  (void)__ptr;
  return 0;
}
static __inline__ void __gpu_thread_suspend(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

#undef __OMPTARGET_HOST_ASK

#ifdef __cplusplus
}
#endif

#endif /* OMPTARGET_HOST_GPUINTRIN_H */
