// Groups of items on a host device through ol*: GPU-style kernels
// (offload_kernels_groups.c, built against gpuintrin.h for host devices)
// see their group and item ids, meet at their group's barrier and share
// their group's memory. Usage: offload_groups GROUPS_SO DYNAMIC_LOCAL_SO
// [WIDEST] (the items of the widest group launched, 1024 unless given).
// Prints key=value lines; exits 1 if a check failed.
#include "offload_checks.h"

static ol_symbol_handle_t kernel(ol_program_handle_t program,
                                 const char *name) {
  ol_symbol_handle_t symbol = NULL;
  EXPECT(olGetSymbol(program, name, OL_SYMBOL_KIND_KERNEL, &symbol), 0);
  return symbol;
}

// `ids` on `groups` x `items`: every item wrote its own ids, once.
static int ids_run(ol_queue_handle_t queue, ol_device_handle_t device,
                   ol_symbol_handle_t ids, ol_kernel_launch_size_args_t size) {
  uint32_t groups = size.NumGroups.x * size.NumGroups.y * size.NumGroups.z;
  uint32_t items = size.GroupSize.x * size.GroupSize.y * size.GroupSize.z;
  uint32_t *out = NULL;
  EXPECT(olMemAlloc(device, OL_ALLOC_TYPE_MANAGED,
                    groups * items * sizeof *out, (void **)&out),
         0);
  if (!out)
    return 0;
  for (uint32_t i = 0; i < groups * items; i++)
    out[i] = UINT32_MAX;
  struct {
    uint32_t *out;
  } args = {out};
  EXPECT(olLaunchKernel(queue, device, ids, &args, sizeof args, &size), 0);
  if (queue)
    EXPECT(olSyncQueue(queue), 0);
  int good = 1;
  for (uint32_t g = 0; g < groups; g++)
    for (uint32_t i = 0; i < items; i++)
      good &= out[g * items + i] == g * 1000 + i;
  EXPECT(olMemFree(out), 0);
  return good;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: offload_groups GROUPS_SO DYNAMIC_LOCAL_SO\n");
    return 2;
  }
  EXPECT(olInit(), 0);
  struct devices found = {NULL, NULL};
  EXPECT(olIterateDevices(find_devices, &found), 0);
  CHECK(found.cpu != NULL && found.host != NULL, "a host CPU device");
  if (!found.cpu || !found.host)
    return 1;
  ol_device_handle_t device = found.cpu, host = found.host;
  uint32_t max_items = 0;
  EXPECT(olGetDeviceInfo(device, OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE,
                         sizeof max_items, &max_items),
         0);
  printf("max_group_items=%u\n", max_items);

  long length = 0;
  char *bytes = read_file(argv[1], &length);
  CHECK(bytes != NULL, "read the kernels' object");
  if (!bytes)
    return 1;
  ol_program_handle_t program = NULL;
  EXPECT(olCreateProgram(device, bytes, length, &program), 0);
  free(bytes);
  ol_queue_handle_t queue = NULL;
  EXPECT(olCreateQueue(device, &queue), 0);

  // Three dimensions of groups and of items; one item per group (run on
  // the calling thread); one group of the most items.
  ol_symbol_handle_t ids = kernel(program, "ids");
  ol_kernel_launch_size_args_t shape = {3, {3, 2, 2}, {4, 2, 3}, 0};
  CHECK(ids_run(queue, device, ids, shape), "ids of 12 groups x 24 items");
  ol_kernel_launch_size_args_t single_items = {1, {5, 1, 1}, {1, 1, 1}, 0};
  CHECK(ids_run(NULL, device, ids, single_items), "ids of 5 groups x 1 item");
  uint32_t most = argc > 3 ? (uint32_t)atoi(argv[3]) : 1024;
  ol_kernel_launch_size_args_t widest = {1, {1, 1, 1}, {most, 1, 1}, 0};
  CHECK(ids_run(queue, device, ids, widest), "ids of 1 group of the most items");

  // The group's memory and barrier, four groups in turn, three times
  // (groups of 256 items, or of the widest group's items if fewer).
  enum { GROUPS = 4, MAX_ITEMS = 256 };
  const uint32_t ITEMS = most < MAX_ITEMS ? most : MAX_ITEMS;
  static uint32_t in[GROUPS * MAX_ITEMS];
  for (uint32_t i = 0; i < GROUPS * ITEMS; i++)
    in[i] = i;
  void *in_dev = NULL, *sums_dev = NULL;
  EXPECT(olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, sizeof in, &in_dev), 0);
  EXPECT(olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, GROUPS * sizeof(uint32_t),
                    &sums_dev),
         0);
  EXPECT(olMemcpy(queue, in_dev, device, in, host, GROUPS * ITEMS * sizeof in[0]),
         0);
  struct {
    void *in;
    void *out;
  } sum_args = {in_dev, sums_dev};
  ol_kernel_launch_size_args_t sum_shape = {1, {GROUPS, 1, 1}, {ITEMS, 1, 1}, 0};
  ol_symbol_handle_t group_sum = kernel(program, "group_sum");
  int summed = 1;
  for (int round = 0; round < 3; round++) {
    uint32_t sums[GROUPS] = {0};
    EXPECT(olLaunchKernel(queue, device, group_sum, &sum_args, sizeof sum_args,
                          &sum_shape),
           0);
    EXPECT(olMemcpy(queue, sums, host, sums_dev, device, sizeof sums), 0);
    EXPECT(olSyncQueue(queue), 0);
    for (uint32_t g = 0; g < GROUPS; g++) {
      // The sum of g*ITEMS .. g*ITEMS + ITEMS - 1.
      uint32_t first = g * ITEMS, want = ITEMS * first + ITEMS * (ITEMS - 1) / 2;
      summed &= sums[g] == want;
    }
  }
  CHECK(summed, "each group summed its slice through its memory");
  printf("group_sums=%s\n", summed ? "right" : "wrong");

  // Items that return before the barrier hold no one back: 64 items, of
  // which 40 sum, three groups in turn.
  struct {
    void *in;
    void *out;
    uint64_t n; // a uint32_t in its own 8-byte slot
  } guarded_args = {in_dev, sums_dev, 40};
  ol_kernel_launch_size_args_t guarded_shape = {1, {3, 1, 1}, {64, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, device, kernel(program, "guarded_sum"),
                        &guarded_args, sizeof guarded_args, &guarded_shape),
         0);
  uint32_t guarded = 0;
  EXPECT(olMemcpy(NULL, &guarded, host, sums_dev, device, sizeof guarded), 0);
  CHECK(guarded == 40 * 39 / 2, "40 of 64 items summed past 24 that returned");
  EXPECT(olMemFree(in_dev), 0);
  EXPECT(olMemFree(sums_dev), 0);

  // Each item is a warp of one lane.
  uint32_t *lanes_out = NULL;
  EXPECT(olMemAlloc(device, OL_ALLOC_TYPE_MANAGED, 8 * sizeof *lanes_out,
                    (void **)&lanes_out),
         0);
  struct {
    uint32_t *out;
  } lane_args = {lanes_out};
  ol_kernel_launch_size_args_t eight = {1, {1, 1, 1}, {8, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, device, kernel(program, "lanes"), &lane_args,
                        sizeof lane_args, &eight),
         0);
  int one_lane = 1;
  for (int i = 0; lanes_out && i < 8; i++)
    one_lane &= lanes_out[i] == 101;
  CHECK(one_lane, "one lane per warp");
  EXPECT(olMemFree(lanes_out), 0);

  // 17 argument slots (a launch passes up to 16 from its stack), 4 items.
  struct {
    uint64_t *out;
    uint64_t a[16];
  } many = {NULL, {0}};
  EXPECT(olMemAlloc(device, OL_ALLOC_TYPE_MANAGED, 4 * sizeof(uint64_t),
                    (void **)&many.out),
         0);
  for (int i = 0; i < 16; i++)
    many.a[i] = (uint64_t)(i + 1) << 20;
  ol_kernel_launch_size_args_t four = {1, {1, 1, 1}, {4, 1, 1}, 0};
  EXPECT(olLaunchKernel(NULL, device, kernel(program, "sum17"), &many,
                        sizeof many, &four),
         0);
  int all_args = many.out != NULL;
  for (int i = 0; all_args && i < 4; i++)
    all_args &= many.out[i] == (uint64_t)136 << 20;
  CHECK(all_args, "17 argument slots reach each item");
  EXPECT(olMemFree(many.out), 0);

  // The shape's limits.
  ol_kernel_launch_size_args_t too_wide = {1, {1, 1, 1}, {1025, 1, 1}, 0};
  struct {
    void *out;
  } no_out = {NULL};
  EXPECT(olLaunchKernel(NULL, device, ids, &no_out, sizeof no_out, &too_wide),
         OL_ERRC_INVALID_ARGUMENT);

  // Dynamic group memory has no host form: its object does not load.
  bytes = read_file(argv[2], &length);
  CHECK(bytes != NULL, "read the dynamic-memory kernel's object");
  ol_program_handle_t dynamic = NULL;
  if (bytes)
    EXPECT(olCreateProgram(device, bytes, length, &dynamic),
           OL_ERRC_INVALID_BINARY);
  free(bytes);

  EXPECT(olDestroyQueue(queue), 0);
  EXPECT(olDestroyProgram(program), 0);
  EXPECT(olShutDown(), 0);
  printf("failures=%d\n", failures);
  return failures ? 1 : 0;
}
