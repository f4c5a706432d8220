// Per-operation cost of an OpenMP offload runtime, measured from an
// ordinary clang offload program. The same binary runs on LLVM's
// libomptarget and on ours (LD_LIBRARY_PATH picks which libomptarget it
// loads); benches/llvm_comparison/compare.py runs it both ways, alternating,
// and compares.
//
// Build: clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
//          benches/llvm_comparison/offload_overhead.c -o offload_overhead -lpthread
//        (clang-19 and clang-22 build it the same way)
// Run:   ./offload_overhead [iterations [op]]   (default 20000, every op;
//        naming one op times only that one, for profiling)
//        OO_MULTITHREADED=1: start and join one thread first. glibc skips
//        the atomic instructions of pthread mutexes and malloc while a
//        process has never had a second thread; any program that ran an
//        `omp parallel` has, so this is the realistic setting for a runtime
//        built on pthread mutexes (LLVM's). Rust's std locks always use
//        atomics. The thread rows start threads anyway.
//
// Output: "runtime <path of the libomptarget in use>", one line per
// operation "<op> <ns per op>" (for the *_vs_* rows a ratio instead), then
// "peak_rss_kb <getrusage ru_maxrss>". Every operation is checked once for
// a correct result before it is timed, so a runtime that skips work cannot
// look fast; on a wrong result the program prints "FAILED ..." and exits 1.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define SMALL 16 // elements of each small array (64 bytes of int)
#define WARMUP 200

static int arr[SMALL];
static int m0[SMALL], m1[SMALL], m2[SMALL], m3[SMALL], m4[SMALL], m5[SMALL], m6[SMALL],
    m7[SMALL], m8[SMALL], m9[SMALL], m10[SMALL], m11[SMALL], m12[SMALL], m13[SMALL],
    m14[SMALL], m15[SMALL];
static int *const many[16] = {m0, m1, m2, m3, m4, m5, m6, m7,
                              m8, m9, m10, m11, m12, m13, m14, m15};

// Exported by every libomptarget; the program links against it.
extern void __tgt_register_requires(int64_t flags);

static void *no_op_thread(void *arg) { return arg; }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
  printf("FAILED %s\n", what);
  fflush(stdout);
  exit(1);
}

// A small deterministic generator (sizes and probe order).
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

// An empty target region.
static void op_empty(void) {
#pragma omp target
  {
  }
}

// An empty target region with three scalar firstprivates.
static void op_empty_region(int a, long b, double c) {
#pragma omp target firstprivate(a, b, c)
  {
    volatile double sink = a + b + c;
    (void)sink;
  }
}

// Kernels with 1, 8 and 32 arguments (firstprivate scalars, passed by
// value): the launch path's cost per argument. The timed kernels write
// nothing back; check_all runs the same argument lists with a mapped result.
#define A8(p) p##0, p##1, p##2, p##3, p##4, p##5, p##6, p##7
#define P8(p) int p##0, int p##1, int p##2, int p##3, int p##4, int p##5, int p##6, int p##7
#define SUM8(p) (p##0 + p##1 + p##2 + p##3 + p##4 + p##5 + p##6 + p##7)
#define A32 A8(a), A8(b), A8(c), A8(d)
#define P32 P8(a), P8(b), P8(c), P8(d)
#define SUM32 (SUM8(a) + SUM8(b) + SUM8(c) + SUM8(d))
static void op_args_1(int a0) {
#pragma omp target firstprivate(a0)
  {
    volatile int sink = a0;
    (void)sink;
  }
}
static void op_args_8(P8(a)) {
#pragma omp target firstprivate(A8(a))
  {
    volatile int sink = SUM8(a);
    (void)sink;
  }
}
static void op_args_32(P32) {
#pragma omp target firstprivate(A32)
  {
    volatile int sink = SUM32;
    (void)sink;
  }
}
static int check_args_1(int a0) {
  int r = 0;
#pragma omp target firstprivate(a0) map(from : r)
  r = a0;
  return r;
}
static int check_args_8(P8(a)) {
  int r = 0;
#pragma omp target firstprivate(A8(a)) map(from : r)
  r = SUM8(a);
  return r;
}
static int check_args_32(P32) {
  int r = 0;
#pragma omp target firstprivate(A32) map(from : r)
  r = SUM32;
  return r;
}

// One scalar mapped to the device and back.
static int scalar;
static void op_map_scalar(void) {
#pragma omp target map(tofrom : scalar)
  { scalar++; }
}

// Map a small array to the device and back.
static void op_enter_exit(void) {
#pragma omp target enter data map(to : arr[0:SMALL])
#pragma omp target exit data map(from : arr[0:SMALL])
}

// Update a small array that is already mapped.
static void op_update_to(void) {
#pragma omp target update to(arr[0:SMALL])
}
static void op_update_from(void) {
#pragma omp target update from(arr[0:SMALL])
}

// omp_target_alloc/omp_target_free of one size.
static void op_alloc_free(size_t size, int dev) {
  void *p = omp_target_alloc(size, dev);
  if (!p)
    fail("omp_target_alloc returned NULL");
  omp_target_free(p, dev);
}

// A target region mapping 16 small arrays (new mappings each time, or
// already present when called inside a target data region).
static void op_region_16(void) {
#pragma omp target map(tofrom : m0[0:SMALL], m1[0:SMALL], m2[0:SMALL], m3[0:SMALL],         \
                           m4[0:SMALL], m5[0:SMALL], m6[0:SMALL], m7[0:SMALL], m8[0:SMALL], \
                           m9[0:SMALL], m10[0:SMALL], m11[0:SMALL], m12[0:SMALL],            \
                           m13[0:SMALL], m14[0:SMALL], m15[0:SMALL])
  {
    m0[0]++, m1[0]++, m2[0]++, m3[0]++, m4[0]++, m5[0]++, m6[0]++, m7[0]++;
    m8[0]++, m9[0]++, m10[0]++, m11[0]++, m12[0]++, m13[0]++, m14[0]++, m15[0]++;
  }
}

// One check of the basic operations' effects before any timing.
static void check_all(int dev) {
  int seen = -1;
#pragma omp target map(from : seen)
  seen = omp_is_initial_device();
  // The x86_64 offload "device" runs in-process; omp_is_initial_device() is
  // 0 there only if the region really went through the runtime.
  if (seen != 0)
    fail("target region did not run on an offload device");

  for (int i = 0; i < SMALL; i++)
    arr[i] = i;
#pragma omp target enter data map(to : arr[0:SMALL])
#pragma omp target
  for (int i = 0; i < SMALL; i++)
    arr[i] *= 2;
  for (int i = 0; i < SMALL; i++)
    arr[i] = -1; // host copy diverges; exit data must bring the device's back
#pragma omp target exit data map(from : arr[0:SMALL])
  for (int i = 0; i < SMALL; i++)
    if (arr[i] != 2 * i)
      fail("enter/exit data round trip");

#pragma omp target enter data map(alloc : arr[0:SMALL])
  for (int i = 0; i < SMALL; i++)
    arr[i] = 7;
  op_update_to();
  for (int i = 0; i < SMALL; i++)
    arr[i] = 0;
  op_update_from();
  for (int i = 0; i < SMALL; i++)
    if (arr[i] != 7)
      fail("target update round trip");
#pragma omp target exit data map(release : arr[0:SMALL])

  for (int k = 0; k < 16; k++)
    memset(many[k], 0, sizeof m0);
  op_region_16();
  for (int k = 0; k < 16; k++)
    if (many[k][0] != 1)
      fail("region mapping 16 arrays");

  scalar = 41;
  op_map_scalar();
  if (scalar != 42)
    fail("map(tofrom) of a scalar");

  if (check_args_1(5) != 5)
    fail("kernel with 1 argument");
  if (check_args_8(1, 2, 3, 4, 5, 6, 7, 8) != 36)
    fail("kernel with 8 arguments");
  // A8(1) is 10, 11, ..., 17 (token pasting): 108 + 188 + 268 + 128.
  if (check_args_32(A8(1), A8(2), A8(3), 1, 2, 3, 4, 5, 6, 7, 100) != 692)
    fail("kernel with 32 arguments");

  int *p = omp_target_alloc(64, dev);
  if (!p)
    fail("omp_target_alloc returned NULL");
  int ok = 0;
#pragma omp target is_device_ptr(p) map(from : ok)
  {
    for (int i = 0; i < 16; i++)
      p[i] = i;
    ok = p[15] == 15;
  }
  omp_target_free(p, dev);
  if (!ok)
    fail("omp_target_alloc memory not usable in a region");
}

static const char *only; // time only this op, when set

static int wanted(const char *name) { return !only || strcmp(only, name) == 0; }

#define TIME(name, iters, body)                                                                   \
  do {                                                                                            \
    if (!wanted(name))                                                                            \
      break;                                                                                      \
    for (long w_ = 0; w_ < WARMUP; w_++) {                                                        \
      body;                                                                                       \
    }                                                                                             \
    uint64_t t0_ = now_ns();                                                                      \
    for (long i_ = 0; i_ < (iters); i_++) {                                                       \
      body;                                                                                       \
    }                                                                                             \
    printf("%s %.1f\n", name, (double)(now_ns() - t0_) / (double)(iters));                       \
  } while (0)

// 1000 live blocks of random sizes (16 B to 8 KiB, the cached range):
// each step frees one at random and allocates a new random size in its
// place, so the allocator works with a realistic live set.
#define LIVE_BLOCKS 1000
static void bench_random_live_blocks(long iters, int dev) {
  if (!wanted("alloc_free_1000_live_random"))
    return;
  static void *blocks[LIVE_BLOCKS];
  for (int i = 0; i < LIVE_BLOCKS; i++)
    if (!(blocks[i] = omp_target_alloc(16 + next_random() % 8177, dev)))
      fail("omp_target_alloc of a live block");
  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    uint64_t r = next_random();
    int slot = (int)(r % LIVE_BLOCKS);
    omp_target_free(blocks[slot], dev);
    if (!(blocks[slot] = omp_target_alloc(16 + (r >> 32) % 8177, dev)))
      fail("omp_target_alloc of a live block");
  }
  printf("alloc_free_1000_live_random %.1f\n", (double)(now_ns() - t0) / (double)iters);
  for (int i = 0; i < LIVE_BLOCKS; i++)
    omp_target_free(blocks[i], dev);
}

// The mapping table at N live mappings: N 64-byte sections of one host
// array at a 128-byte stride are mapped, then `enter data` of new sections
// (in the gaps), `omp_target_is_present` of random live ones and `exit
// data` of the new ones are timed, each per operation.
#define STRIDE 32 // ints: 128 bytes
static int *table_host;
static void bench_mapping_table(long live, long iters, int dev) {
  char enter_name[64], present_name[64], exit_name[64];
  snprintf(enter_name, sizeof enter_name, "enter_data_at_%ldk_mappings", live / 1000);
  snprintf(present_name, sizeof present_name, "is_present_at_%ldk_mappings", live / 1000);
  snprintf(exit_name, sizeof exit_name, "exit_data_at_%ldk_mappings", live / 1000);
  if (!wanted(enter_name) && !wanted(present_name) && !wanted(exit_name))
    return;
  if (iters > live)
    iters = live;
  int *h = table_host;
  for (long i = 0; i < live; i++) {
#pragma omp target enter data map(to : h[i * STRIDE:SMALL])
  }
  // The new sections sit in the gaps (offset SMALL within each stride),
  // spread over the whole table in a scrambled order.
  long *order = malloc(sizeof(long) * (size_t)iters);
  if (!order)
    fail("malloc");
  for (long i = 0; i < iters; i++)
    order[i] = (long)(next_random() % (uint64_t)live);
  for (long i = 0; i < iters; i++) // distinct slots: a repeat is a refcount bump
    for (long j = 0; j < i && j < 64; j++)
      if (order[i] == order[i - 1 - j])
        order[i] = (order[i] + 1) % live;

  uint64_t t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    int *s = h + order[i] * STRIDE + SMALL;
#pragma omp target enter data map(to : s[0:SMALL])
  }
  double enter_ns = (double)(now_ns() - t0) / (double)iters;

  long present = 0;
  t0 = now_ns();
  for (long i = 0; i < iters; i++)
    present += omp_target_is_present(h + order[iters - 1 - i] * STRIDE, dev);
  double present_ns = (double)(now_ns() - t0) / (double)iters;
  if (present != iters)
    fail("omp_target_is_present of a live mapping");

  t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    int *s = h + order[i] * STRIDE + SMALL;
#pragma omp target exit data map(release : s[0:SMALL])
  }
  double exit_ns = (double)(now_ns() - t0) / (double)iters;
  for (long i = 0; i < iters; i++)
    if (omp_target_is_present(h + order[i] * STRIDE + SMALL, dev))
      fail("exit data left a mapping");
  free(order);
  for (long i = 0; i < live; i++) {
#pragma omp target exit data map(release : h[i * STRIDE:SMALL])
  }
  if (wanted(enter_name))
    printf("%s %.1f\n", enter_name, enter_ns);
  if (wanted(present_name))
    printf("%s %.1f\n", present_name, present_ns);
  if (wanted(exit_name))
    printf("%s %.1f\n", exit_name, exit_ns);
}

// Threads launching empty regions: the wall time per region of the whole
// group, from the first thread's start to the last one's end (so 2 threads
// that scale perfectly show half the 1-thread figure).
struct launcher {
  long iters;
  pthread_barrier_t *start;
  uint64_t begin, end;
};
static void *launch_empty_regions(void *arg) {
  struct launcher *l = arg;
  for (long i = 0; i < WARMUP; i++)
    op_empty();
  pthread_barrier_wait(l->start);
  l->begin = now_ns();
  for (long i = 0; i < l->iters; i++)
    op_empty();
  l->end = now_ns();
  return NULL;
}
static void bench_threads(int threads, long iters) {
  char name[64];
  snprintf(name, sizeof name, "empty_region_%d_threads_aggregate", threads);
  if (!wanted(name))
    return;
  pthread_t tid[64];
  struct launcher l[64];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int t = 0; t < threads; t++) {
    l[t] = (struct launcher){iters, &start, 0, 0};
    if (pthread_create(&tid[t], NULL, launch_empty_regions, &l[t]) != 0)
      fail("pthread_create");
  }
  uint64_t begin = UINT64_MAX, end = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    if (l[t].begin < begin)
      begin = l[t].begin;
    if (l[t].end > end)
      end = l[t].end;
  }
  printf("%s %.1f\n", name, (double)(end - begin) / (double)(iters * threads));
  pthread_barrier_destroy(&start);
}

// `target update` of 64 MiB against a plain memcpy of 64 MiB in the same
// process: the ratio of their bandwidths (1.0: the runtime adds nothing).
#define BIG_BYTES (64u << 20)
static void bench_update_64mib(int reps) {
  if (!wanted("update_to_64MiB_vs_memcpy"))
    return;
  char *big = malloc(BIG_BYTES), *copy = malloc(BIG_BYTES);
  if (!big || !copy)
    fail("malloc of 64 MiB");
  memset(big, 1, BIG_BYTES);
  memset(copy, 2, BIG_BYTES);
#pragma omp target enter data map(to : big[0:BIG_BYTES])
  double best_update = 1e30, best_memcpy = 1e30;
  for (int r = 0; r < reps; r++) {
    big[r] = (char)r;
    uint64_t t0 = now_ns();
#pragma omp target update to(big[0:BIG_BYTES])
    double u = (double)(now_ns() - t0);
    t0 = now_ns();
    memcpy(copy, big, BIG_BYTES);
    double m = (double)(now_ns() - t0);
    if (u < best_update)
      best_update = u;
    if (m < best_memcpy)
      best_memcpy = m;
  }
  char on_device = 0;
#pragma omp target map(from : on_device)
  on_device = big[reps - 1];
  if (on_device != (char)(reps - 1) || copy[reps - 1] != (char)(reps - 1))
    fail("target update of 64 MiB");
#pragma omp target exit data map(release : big[0:BIG_BYTES])
  // Bandwidth of the update relative to memcpy's (best of the repetitions).
  printf("update_to_64MiB_vs_memcpy %.3f\n", best_memcpy / best_update);
  free(big);
  free(copy);
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  only = argc > 2 ? argv[2] : NULL;
  if (iters <= 0 || argc > 3) {
    fprintf(stderr, "usage: %s [iterations > 0 [op]]\n", argv[0]);
    return 2;
  }
  const char *mt = getenv("OO_MULTITHREADED");
  if (mt && strcmp(mt, "1") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, no_op_thread, NULL) != 0 || pthread_join(thread, NULL) != 0)
      fail("pthread_create/join");
    printf("multithreaded 1\n");
  }

  Dl_info info;
  if (dladdr((void *)&__tgt_register_requires, &info) && info.dli_fname)
    printf("runtime %s\n", info.dli_fname);
  else
    printf("runtime unknown\n");

  int dev = omp_get_default_device();
  if (omp_get_num_devices() < 1)
    fail("no offload device");

  // The first region pays for the runtime's lazy start: plugin load, device
  // init, image load. One shot; noisy.
  uint64_t t0 = now_ns();
  op_empty_region(1, 2, 3.0);
  if (wanted("first_region_once"))
    printf("first_region_once %.1f\n", (double)(now_ns() - t0));

  check_all(dev);

  TIME("empty_region", iters, op_empty());
  TIME("empty_region_3_firstprivate", iters, op_empty_region(1, 2, 3.0));
  TIME("kernel_1_arg", iters, op_args_1(1));
  TIME("kernel_8_args", iters, op_args_8(A8(1)));
  TIME("kernel_32_args", iters, op_args_32(A8(1), A8(2), A8(3), A8(4)));
  TIME("map_tofrom_scalar", iters, op_map_scalar());
  TIME("enter_exit_data_64B", iters, op_enter_exit());
#pragma omp target enter data map(to : arr[0:SMALL])
  TIME("update_to_64B", iters, op_update_to());
  TIME("update_from_64B", iters, op_update_from());
#pragma omp target exit data map(release : arr[0:SMALL])
  TIME("target_alloc_free_64B", iters, op_alloc_free(64, dev));
  TIME("target_alloc_free_4KiB", iters, op_alloc_free(4096, dev));
  TIME("target_alloc_free_1MiB", iters, op_alloc_free(1 << 20, dev));
  bench_random_live_blocks(iters, dev);
  TIME("region_map_16_arrays_new", iters / 4 + 1, op_region_16());
#pragma omp target data map(tofrom : m0[0:SMALL], m1[0:SMALL], m2[0:SMALL], m3[0:SMALL],     \
                                m4[0:SMALL], m5[0:SMALL], m6[0:SMALL], m7[0:SMALL],         \
                                m8[0:SMALL], m9[0:SMALL], m10[0:SMALL], m11[0:SMALL],       \
                                m12[0:SMALL], m13[0:SMALL], m14[0:SMALL], m15[0:SMALL])
  TIME("region_map_16_arrays_present", iters / 4 + 1, op_region_16());

  table_host = calloc((size_t)100000 * STRIDE, sizeof(int));
  if (!table_host)
    fail("calloc");
  bench_mapping_table(1000, iters, dev);
  bench_mapping_table(100000, iters, dev);
  free(table_host);

  // The thread rows run 10x the iterations: at 20000 launches in all, the
  // window (~4 ms) was short enough that a thread started late by the
  // scheduler of a 2-core machine decided the figure.
  long thread_iters = iters * 10;
  TIME("empty_region_1_thread", thread_iters, op_empty());
  bench_threads(2, thread_iters / 2 + 1);
  bench_threads(8, thread_iters / 8 + 1);
  bench_update_64mib(iters >= 1000 ? 10 : 2);

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak_rss_kb %ld\n", ru.ru_maxrss);
  fflush(stdout); // before any exit-time runtime output
  return 0;
}
