// The same operation through LLVM 22's liboffload API (`ol*`) and through
// OpenMP offload, on the same host device of the same runtime, in one
// process: ours serves both (libomptarget.so and libLLVMOffload.so.22.1
// are one library), so the rows say what each front end adds.
//
// Build (benches/liboffload/run.sh does): clang-22 -O2 -fopenmp
//   -fopenmp-targets=x86_64-unknown-linux-gnu -I <LLVM 22 include>
//   -I ffi/program/shim/tests/c ol_vs_openmp.c -L <LLVM 22 lib>
//   -lLLVMOffload, and the empty kernel
//   `clang -O2 -shared -fPIC empty_kernel.c`.
// Run:   LD_LIBRARY_PATH=<ours> ./ol_vs_openmp EMPTY_KERNEL_SO [iterations]
//
// Rows, each the median of 7 batches of `iterations` operations, in ns
// per operation: `launch_empty` (`#pragma omp target` with nothing in it,
// against olLaunchKernel of an empty kernel, one item, no queue),
// `alloc_free_64B` (omp_target_alloc + omp_target_free against olMemAlloc
// + olMemFree), `copy_64B_queued` (omp_target_memcpy, host to device,
// against olMemcpy on a queue then olSyncQueue). Every operation is
// checked once for its result before it is timed. Then `ol_vs_openmp_ROW`
// = ol* time / OpenMP time.
#define _GNU_SOURCE
#include "offload_checks.h" // ffi/program/shim/tests/c: find_devices, read_file
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void must(ol_result_t r, const char *what) {
  if (r) {
    printf("FAILED %s: %s\n", what, r->Details ? r->Details : "");
    exit(1);
  }
}

static void fail(const char *what) {
  printf("FAILED %s\n", what);
  exit(1);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Median over BATCHES of the ns per call of `op` (called `n` times a batch).
static double time_op(void (*op)(void), long n) {
  double batch[BATCHES];
  for (long i = 0; i < n / 10 + 1; i++)
    op(); // warm
  for (int b = 0; b < BATCHES; b++) {
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
      op();
    batch[b] = (double)(now_ns() - t0) / (double)n;
  }
  qsort(batch, BATCHES, sizeof batch[0], cmp);
  return batch[BATCHES / 2];
}

static int omp_device, omp_host;
static ol_device_handle_t ol_device, ol_host;
static ol_symbol_handle_t empty_kernel;
static ol_queue_handle_t queue;
static char host_bytes[64];
static void *omp_block, *ol_block;

static void omp_launch(void) {
#pragma omp target device(omp_device)
  {
  }
}

static void ol_launch(void) {
  static const ol_kernel_launch_size_args_t one = {1, {1, 1, 1}, {1, 1, 1}, 0};
  must(olLaunchKernel(NULL, ol_device, empty_kernel, NULL, 0, &one),
       "olLaunchKernel");
}

static void omp_alloc_free(void) {
  void *p = omp_target_alloc(64, omp_device);
  if (!p)
    fail("omp_target_alloc");
  omp_target_free(p, omp_device);
}

static void ol_alloc_free(void) {
  void *p = NULL;
  must(olMemAlloc(ol_device, OL_ALLOC_TYPE_DEVICE, 64, &p), "olMemAlloc");
  must(olMemFree(p), "olMemFree");
}

static void omp_copy(void) {
  // The initial device's number is asked once: libomp's
  // omp_get_initial_device looks a symbol up with dlsym on each call
  // (about 6,000 instructions), which is libomp's cost, not the copy's.
  if (omp_target_memcpy(omp_block, host_bytes, 64, 0, 0, omp_device, omp_host))
    fail("omp_target_memcpy");
}

static void ol_copy(void) {
  must(olMemcpy(queue, ol_block, ol_device, host_bytes, ol_host, 64),
       "olMemcpy");
  must(olSyncQueue(queue), "olSyncQueue");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s EMPTY_KERNEL_SO [iterations]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 20000;
  if (n <= 0)
    fail("iterations");
  must(olInit(), "olInit");
  struct devices found = {NULL, NULL};
  must(olIterateDevices(find_devices, &found), "olIterateDevices");
  if (!found.cpu || !found.host)
    fail("no host CPU device");
  ol_device = found.cpu;
  ol_host = found.host;
  // The same device: OpenMP's device 0 is the first host CPU device too
  // (one runtime, one device list); checked by its UID.
  omp_device = 0;
  omp_host = omp_get_initial_device();
  char uid[64] = "";
  must(olGetDeviceInfo(ol_device, OL_DEVICE_INFO_UID, sizeof uid, uid),
       "the device's UID");
  const char *omp_uid = omp_get_uid_from_device(omp_device);
  if (!omp_uid || strcmp(uid, omp_uid) != 0)
    fail("OpenMP's device 0 is not the first ol* CPU device");
  printf("device %s\n", uid);

  long length = 0;
  char *bytes = read_file(argv[1], &length);
  if (!bytes)
    fail("reading the empty kernel's object");
  ol_program_handle_t program = NULL;
  must(olCreateProgram(ol_device, bytes, length, &program), "olCreateProgram");
  free(bytes);
  must(olGetSymbol(program, "empty", OL_SYMBOL_KIND_KERNEL, &empty_kernel),
       "olGetSymbol");
  must(olCreateQueue(ol_device, &queue), "olCreateQueue");
  omp_block = omp_target_alloc(64, omp_device);
  must(olMemAlloc(ol_device, OL_ALLOC_TYPE_DEVICE, 64, &ol_block), "olMemAlloc");
  if (!omp_block)
    fail("omp_target_alloc");

  // Each path's result, checked once: the copies land, the launches run.
  for (int i = 0; i < 64; i++)
    host_bytes[i] = (char)(i * 7 + 1);
  char back[64];
  omp_copy();
  if (omp_target_memcpy(back, omp_block, 64, 0, 0, omp_get_initial_device(),
                        omp_device) ||
      memcmp(back, host_bytes, 64) != 0)
    fail("omp_target_memcpy's bytes");
  ol_copy();
  must(olMemcpy(NULL, back, ol_host, ol_block, ol_device, 64), "olMemcpy back");
  if (memcmp(back, host_bytes, 64) != 0)
    fail("olMemcpy's bytes");
  int ran = 0;
#pragma omp target device(omp_device) map(tofrom : ran)
  ran = 1;
  if (!ran)
    fail("a target region");

  struct {
    const char *name;
    void (*omp)(void);
    void (*ol)(void);
  } rows[] = {
      {"launch_empty", omp_launch, ol_launch},
      {"alloc_free_64B", omp_alloc_free, ol_alloc_free},
      {"copy_64B_queued", omp_copy, ol_copy},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    double omp_ns = time_op(rows[r].omp, n);
    double ol_ns = time_op(rows[r].ol, n);
    printf("openmp_%s %.1f\nol_%s %.1f\nol_vs_openmp_%s %.3f\n", rows[r].name,
           omp_ns, rows[r].name, ol_ns, rows[r].name, ol_ns / omp_ns);
  }

  omp_target_free(omp_block, omp_device);
  must(olMemFree(ol_block), "olMemFree");
  must(olDestroyQueue(queue), "olDestroyQueue");
  must(olDestroyProgram(program), "olDestroyProgram");
  must(olShutDown(), "olShutDown");
  return 0;
}
