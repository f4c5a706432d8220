// Per-operation overhead of an OpenMP offload runtime, measured from an
// ordinary clang-14 offload program. The same binary runs on LLVM 14's
// libomptarget and on ours (LD_LIBRARY_PATH picks which libomptarget.so it
// loads); benches/llvm_comparison/compare_llvm.sh runs it both ways and compares.
//
// Build: clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
//          benches/llvm_comparison/offload_overhead.c -o offload_overhead
// Run:   ./offload_overhead [iterations [op]]   (default 20000, every op;
//        naming one op times only that one, for profiling)
//        OO_MULTITHREADED=1: start and join one thread first. glibc skips
//        the atomic instructions of pthread mutexes and malloc while a
//        process has never had a second thread; any program that ran an
//        `omp parallel` has, so this is the realistic setting for a runtime
//        built on pthread mutexes (LLVM's). Rust's std locks always use
//        atomics.
//
// Output: "runtime <path of the libomptarget.so in use>", one line per
// operation "<op> <ns per op>", then "peak_rss_kb <getrusage ru_maxrss>". Every operation is checked once for
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

// Exported by every libomptarget.so; the program links against it.
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

// (a) An empty target region with three scalar firstprivates.
static void op_empty_region(int a, long b, double c) {
#pragma omp target firstprivate(a, b, c)
  {
    volatile double sink = a + b + c;
    (void)sink;
  }
}

// (b) Map a small array to the device and back.
static void op_enter_exit(void) {
#pragma omp target enter data map(to : arr[0:SMALL])
#pragma omp target exit data map(from : arr[0:SMALL])
}

// (c) Update a small array that is already mapped.
static void op_update_to(void) {
#pragma omp target update to(arr[0:SMALL])
}
static void op_update_from(void) {
#pragma omp target update from(arr[0:SMALL])
}

// (d) omp_target_alloc/omp_target_free of 64 bytes.
static void op_alloc_free(int dev) {
  void *p = omp_target_alloc(64, dev);
  if (!p)
    fail("omp_target_alloc returned NULL");
  omp_target_free(p, dev);
}

// (e) A target region mapping 16 small arrays (new mappings each time, or
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

// One check of every operation's effect before any timing.
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

#define TIME(name, iters, body)                                                                   \
  do {                                                                                            \
    if (only && strcmp(only, name) != 0)                                                          \
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
  printf("first_region_once %.1f\n", (double)(now_ns() - t0));

  check_all(dev);

  TIME("empty_region_3_firstprivate", iters, op_empty_region(1, 2, 3.0));
  TIME("enter_exit_data_64B", iters, op_enter_exit());
#pragma omp target enter data map(to : arr[0:SMALL])
  TIME("update_to_64B", iters, op_update_to());
  TIME("update_from_64B", iters, op_update_from());
#pragma omp target exit data map(release : arr[0:SMALL])
  TIME("target_alloc_free_64B", iters, op_alloc_free(dev));
  TIME("region_map_16_arrays_new", iters, op_region_16());
#pragma omp target data map(tofrom : m0[0:SMALL], m1[0:SMALL], m2[0:SMALL], m3[0:SMALL],     \
                                m4[0:SMALL], m5[0:SMALL], m6[0:SMALL], m7[0:SMALL],         \
                                m8[0:SMALL], m9[0:SMALL], m10[0:SMALL], m11[0:SMALL],       \
                                m12[0:SMALL], m13[0:SMALL], m14[0:SMALL], m15[0:SMALL])
  TIME("region_map_16_arrays_present", iters, op_region_16());

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak_rss_kb %ld\n", ru.ru_maxrss);
  fflush(stdout); // before any exit-time runtime output
  return 0;
}
