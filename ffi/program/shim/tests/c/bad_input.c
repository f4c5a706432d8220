/* Bad input through the C ABI, each call on its own: every one must come
 * back with LLVM 14's error value (and message, where LLVM prints one),
 * lose nothing, and leave the runtime working. Prints `<case>=<result>`
 * lines; stdout is unbuffered so that a crash shows how far it got. */
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* libomptarget's entries, called directly (clang declares them itself). */
void __tgt_register_lib(void *desc);
void __tgt_unregister_lib(void *desc);
void __tgt_target_data_begin(int64_t device_id, int32_t arg_num, void **base, void **begin,
                             int64_t *sizes, int64_t *types);
void __tgt_target_data_end(int64_t device_id, int32_t arg_num, void **base, void **begin,
                           int64_t *sizes, int64_t *types);
void __tgt_target_data_update(int64_t device_id, int32_t arg_num, void **base, void **begin,
                              int64_t *sizes, int64_t *types);

static int run_region(int device, int x) {
#pragma omp target device(device) map(tofrom : x)
  x += 1;
  return x;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int host = omp_get_initial_device();
  printf("first_region=%d\n", run_region(0, 41));
  printf("devices=%d\n", omp_get_num_devices());

  /* omp_target_free: garbage, wrong device, twice, null. None may reach
   * the plugin; a valid block must survive the bad frees. Each one a
   * device refuses is reported with its address (printed here). */
  int stack_array[4];
  void *block = omp_target_alloc(64, 0);
  printf("block=%s\n", block ? "allocated" : "null");
  printf("stack_array_at=%p\nblock_at=%p\n", (void *)stack_array, block);
  omp_target_free(stack_array, 0);
  omp_target_free((void *)0x10, 0);
  omp_target_free(block, 1);   /* allocated on device 0, not 1 */
  omp_target_free(block, 99);  /* no such device */
  omp_target_free(block, -3);  /* no such device */
  omp_target_free(NULL, 0);
  int probe = 1234, back = 0;
  int to_block = omp_target_memcpy(block, &probe, sizeof probe, 0, 0, 0, host);
  int from_block = omp_target_memcpy(&back, block, sizeof back, 0, 0, host, 0);
  printf("block_survives_bad_frees=%s\n",
         to_block == 0 && from_block == 0 && back == probe ? "yes" : "no");
  omp_target_free(block, 0);
  omp_target_free(block, 0);   /* twice */

  /* omp_target_memcpy */
  void *d = omp_target_alloc(64, 0);
  int x = 5;
  printf("memcpy_null_dst=%d\n", omp_target_memcpy(NULL, &x, 4, 0, 0, 0, host));
  printf("memcpy_null_src=%d\n", omp_target_memcpy(d, NULL, 4, 0, 0, 0, host));
  printf("memcpy_bad_dst_device=%d\n", omp_target_memcpy(d, &x, 4, 0, 0, 42, host));
  printf("memcpy_negative_src_device=%d\n", omp_target_memcpy(&x, d, 4, 0, 0, host, -7));
  printf("memcpy_huge_to_device=%d\n", omp_target_memcpy(d, &x, SIZE_MAX, 0, 0, 0, host));
  printf("memcpy_huge_from_device=%d\n", omp_target_memcpy(&x, d, SIZE_MAX, 0, 0, host, 0));
  /* offsets that wrap around: (size_t)-8 from d+16 is not d+8 */
  printf("memcpy_wrapping_dst_offset=%d\n",
         omp_target_memcpy((char *)d + 16, &x, 4, (size_t)-8, 0, 0, host));
  printf("memcpy_wrapping_src_offset=%d\n",
         omp_target_memcpy(&x, (char *)d + 16, 4, 0, (size_t)-8, host, 0));
  printf("memcpy_zero_length=%d\n", omp_target_memcpy(NULL, NULL, 0, 0, 0, 0, host));

  /* omp_target_memcpy_rect */
  size_t volume[2] = {2, 2}, offsets[2] = {0, 0}, dims[2] = {4, 4};
  int grid[16];
  memset(grid, 0, sizeof grid);
  printf("rect_query=%d\n",
         omp_target_memcpy_rect(NULL, NULL, 4, 2, volume, offsets, offsets, dims, dims, 0, host));
  printf("rect_zero_dims=%d\n",
         omp_target_memcpy_rect(d, grid, 4, 0, volume, offsets, offsets, dims, dims, 0, host));
  printf("rect_negative_dims=%d\n",
         omp_target_memcpy_rect(d, grid, 4, -2, volume, offsets, offsets, dims, dims, 0, host));
  printf("rect_null_volume=%d\n",
         omp_target_memcpy_rect(d, grid, 4, 2, NULL, offsets, offsets, dims, dims, 0, host));
  printf("rect_bad_device=%d\n",
         omp_target_memcpy_rect(d, grid, 4, 2, volume, offsets, offsets, dims, dims, 55, host));
  /* Blocks that do not fit in their 4x4 arrays (offset + volume >
   * dimension): refused whole, nothing copied (LLVM 14 copies the rows
   * that fit, then runs off the array; the last case reaches 64 MiB past
   * it). The device block is zeroed first and read back after. */
  int ones[16], rect_back[16];
  for (int i = 0; i < 16; i++) ones[i] = 1, rect_back[i] = 7;
  omp_target_memcpy(d, grid, sizeof grid, 0, 0, 0, host);
  size_t rows_past[2] = {2, 0}, cols_past[2] = {0, 3}, vol_3x2[2] = {3, 2}, vol_2x2[2] = {2, 2};
  size_t vol_huge[2] = {(size_t)1 << 22, 4};
  printf("rect_dst_rows_past_the_array=%d\n",
         omp_target_memcpy_rect(d, ones, 4, 2, vol_3x2, rows_past, offsets, dims, dims, 0, host));
  printf("rect_dst_cols_past_the_array=%d\n",
         omp_target_memcpy_rect(d, ones, 4, 2, vol_2x2, cols_past, offsets, dims, dims, 0, host));
  printf("rect_src_rows_past_the_array=%d\n",
         omp_target_memcpy_rect(rect_back, d, 4, 2, vol_3x2, offsets, rows_past, dims, dims, host, 0));
  printf("rect_volume_far_past_the_array=%d\n",
         omp_target_memcpy_rect(d, ones, 4, 2, vol_huge, offsets, offsets, dims, dims, 0, host));
  int dev_copy[16];
  memset(dev_copy, 1, sizeof dev_copy);
  omp_target_memcpy(dev_copy, d, sizeof dev_copy, 0, 0, host, 0);
  int untouched = 1;
  for (int i = 0; i < 16; i++) untouched &= dev_copy[i] == 0 && rect_back[i] == 7;
  printf("rect_past_the_array_copied_nothing=%s\n", untouched ? "yes" : "no");
  omp_target_free(d, 0);

  /* omp_target_alloc */
  printf("alloc_zero=%s\n", omp_target_alloc(0, 0) ? "allocated" : "null");
  printf("alloc_huge=%s\n", omp_target_alloc(SIZE_MAX, 0) ? "allocated" : "null");
  printf("alloc_negative_device=%s\n", omp_target_alloc(16, -5) ? "allocated" : "null");
  printf("alloc_bad_device=%s\n", omp_target_alloc(16, 1000) ? "allocated" : "null");

  /* presence and association */
  printf("present_bad_device=%d\n", omp_target_is_present(&x, 1000));
  printf("present_null=%d\n", omp_target_is_present(NULL, 0));
  printf("associate_null=%d\n", omp_target_associate_ptr(NULL, NULL, 4, 0, 0));
  printf("associate_bad_device=%d\n", omp_target_associate_ptr(&x, &x, 4, 0, 77));
  printf("disassociate_unknown=%d\n", omp_target_disassociate_ptr(&x, 0));

  /* __tgt_target_data_*: arguments but null arrays, negative counts */
  __tgt_target_data_begin(0, 3, NULL, NULL, NULL, NULL);
  __tgt_target_data_end(0, 3, NULL, NULL, NULL, NULL);
  __tgt_target_data_update(0, 2, NULL, NULL, NULL, NULL);
  __tgt_target_data_update(0, -1, NULL, NULL, NULL, NULL);
  printf("data_null_arrays=returned\n");

  /* registration: null and unknown descriptors */
  char unknown_descriptor[64];
  memset(unknown_descriptor, 0, sizeof unknown_descriptor);
  __tgt_unregister_lib(unknown_descriptor);
  __tgt_unregister_lib(NULL);
  __tgt_register_lib(NULL);
  printf("registration_bad_descriptors=returned\n");

  /* The runtime still works, on both devices. */
  printf("last_region_0=%d\n", run_region(0, 99));
  printf("last_region_1=%d\n", run_region(1, 199));
  return 0;
}
