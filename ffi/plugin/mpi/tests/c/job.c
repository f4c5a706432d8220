// One program rank of an MPI job with device servers; what it does is
// chosen by argv[1]:
//   count        each device sums an array it was given; prints the sums
//   exit         offloads to the last device, then exit(4)
//   exit-thread  a second thread calls exit(5) while main offloads
//   kill         offloads, then raise(SIGKILL)
//   exit-in-kernel  a region on the last device calls exit(6)
//   exit-in-kernel-threads  4 threads offload in a loop, each to its own
//                remote device (two on the last server, two on the first);
//                once each has run 5 regions, thread 0's region on the
//                last device calls exit(7) while the others go on
//   wait READY GO  offloads to every device, writes its pid to the file
//                READY.R (R: its MPI rank), waits until the file GO.R
//                exists, reads a device number from it and offloads to
//                that device (the test kills a device server, or a
//                program rank, meanwhile)
//   one-dies     program rank 1 offloads and raises SIGKILL; rank 0 keeps
//                the last device's server busy for 1.5 s (a region every
//                50 ms: none of its waits reaches its 250 ms liveness
//                check), idles 270 ms (the check finds rank 1 dead just
//                before rank 0's next request comes), then copies new data
//                to the device (mapped since before) and sums it there:
//                4096, or 12285 if the copy was lost
//   slow-kernel  a region on the last device that sleeps 5 s (longer
//                than the test's silence limit, 2 s, plus the 1.25 s before
//                the first probe), then the sum there
//   exit-during-exchange  a thread copies 8 MiB from the first device to
//                the last one in a loop (two servers: each copy goes from
//                server to server) while main's region on the last device
//                calls exit(9) 300 ms in
//   crossing     program ranks 0 and 1 copy 8 MiB between the first and
//                the last device 50 times at once, in opposite directions
//                (rank 0: first to last; rank 1: last to first): two
//                servers asked to send to each other at the same time;
//                prints "rank R: crossing copies: ok" when each copy
//                arrived whole
//   plain-mpi    (built with -DWITH_MPI) MPI_Init in main, unconditionally,
//                as MPI programs do; allreduces its device count and
//                offloads to its last device (a job with no server)
//   finalize-while-offloading  (built with -DWITH_MPI) initialises MPI,
//                starts a thread whose region on the last device sleeps
//                1 s, calls MPI_Finalize 300 ms in, then joins the thread:
//                the region's reply comes after the finalisation began, and
//                its next request is refused (a fatal error)
//   own-mpi      (built with -DWITH_MPI) initialises MPI itself, trades
//                messages with the other program ranks on MPI_COMM_WORLD
//                while offloading, finalises MPI before main returns
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif

enum { N = 4096 };
static double data[N];

static double sum_on(int device) {
  double sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : data) device(device)
  for (int i = 0; i < N; i++) sum += data[i];
  return sum;
}

static void *sleepy_region(void *arg) {
  int device = *(int *)arg, x = 1;
#pragma omp target map(tofrom : x) device(device)
  {
    sleep(1);
    x += 1;
  }
  printf("region done: %d\n", x);
  fflush(stdout);
  return NULL;
}

static void *copy_forever(void *arg) {
  const int *devs = arg;  // source, destination
  size_t size = 8u << 20;
  void *src = omp_target_alloc(size, devs[0]);
  void *dst = omp_target_alloc(size, devs[1]);
  if (!src || !dst) exit(3);
  for (;;) omp_target_memcpy(dst, src, size, 0, 0, devs[1], devs[0]);
  return NULL;
}

static void *exit_soon(void *arg) {
  (void)arg;
  usleep(20000);
  exit(5);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "count";
  for (int i = 0; i < N; i++) data[i] = i % 7;
  int devices = omp_get_num_devices();
  if (!strcmp(mode, "count")) {
    printf("devices: %d\n", devices);
    for (int d = 0; d < devices; d++) printf("device %d: %.0f\n", d, sum_on(d));
    return 0;
  }
  if (!strcmp(mode, "exit")) {
    printf("last device: %.0f\n", sum_on(devices - 1));
    fflush(stdout);
    exit(4);
  }
  if (!strcmp(mode, "exit-thread")) {
    pthread_t thread;
    pthread_create(&thread, NULL, exit_soon, NULL);
    for (;;) sum_on(devices - 1);
  }
  if (!strcmp(mode, "exit-in-kernel")) {
    printf("last device: %.0f\n", sum_on(devices - 1));
    fflush(stdout);
#pragma omp target device(devices - 1)
    { exit(6); }
    printf("not reached\n");
    return 1;
  }
  if (!strcmp(mode, "exit-in-kernel-threads")) {
    static atomic_int warmed_up;
    // Devices 4..: the remote ones, after the 4 local host devices.
    const int on[4] = {devices - 1, devices - 2, 4, 5};
#pragma omp parallel num_threads(4)
    {
      int t = omp_get_thread_num();
      for (int it = 0;; it++) {
        if (sum_on(on[t]) != 12285) {
          printf("wrong sum on thread %d\n", t);
          fflush(stdout);
          for (;;) pause();  // the exit stays thread 0's kernel's
        }
        if (it == 5) atomic_fetch_add(&warmed_up, 1);
        if (t == 0 && atomic_load(&warmed_up) == 4) {
#pragma omp target device(on[0])
          { exit(7); }
          printf("not reached\n");
          fflush(stdout);
        }
      }
    }
    return 1;
  }
  if (!strcmp(mode, "slow-kernel")) {
#pragma omp target device(devices - 1)
    { sleep(5); }
    printf("slow kernel done, then: %.0f\n", sum_on(devices - 1));
    return 0;
  }
  if (!strcmp(mode, "kill")) {
    printf("last device: %.0f\n", sum_on(devices - 1));
    fflush(stdout);
    raise(SIGKILL);
  }
  if (!strcmp(mode, "wait") && argc > 3) {
    for (int d = 0; d < devices; d++) printf("device %d: %.0f\n", d, sum_on(d));
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = "0";
    char tmp[4096], ready_path[4096], go_path[4096];
    snprintf(tmp, sizeof tmp, "%s.%s.tmp", argv[2], rank);
    snprintf(ready_path, sizeof ready_path, "%s.%s", argv[2], rank);
    snprintf(go_path, sizeof go_path, "%s.%s", argv[3], rank);
    FILE *ready = fopen(tmp, "w");
    if (!ready) return 3;
    fprintf(ready, "%d\n", (int)getpid());
    fclose(ready);
    rename(tmp, ready_path);  // whole, or not there
    printf("ready\n");
    fflush(stdout);
    FILE *go;
    while (!(go = fopen(go_path, "r"))) usleep(10000);
    int device = -1;
    if (fscanf(go, "%d", &device) != 1) return 3;
    fclose(go);
    printf("after: device %d: %.0f\n", device, sum_on(device));
    return 0;
  }
  if (!strcmp(mode, "one-dies")) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    int last = devices - 1;
    printf("before: %.0f\n", sum_on(last));
    fflush(stdout);
    if (rank && !strcmp(rank, "1")) raise(SIGKILL);
    // Mapped for the rest: the sum reads what the update copied.
#pragma omp target enter data map(to : data) device(last)
    for (int k = 0; k < 30; k++) {
      int x = k;
#pragma omp target map(tofrom : x) device(last)
      { x += 1; }
      usleep(50000);
    }
    usleep(270000);
    for (int i = 0; i < N; i++) data[i] = 1;
#pragma omp target update to(data) device(last)
    double sum = 0;
#pragma omp target map(tofrom : sum) device(last)
    for (int i = 0; i < N; i++) sum += data[i];
#pragma omp target exit data map(delete : data) device(last)
    printf("after: %.0f\n", sum);
    return 0;
  }
  if (!strcmp(mode, "exit-during-exchange")) {
    static int devs[2];
    devs[0] = 0;
    devs[1] = devices - 1;
    pthread_t copier;
    pthread_create(&copier, NULL, copy_forever, devs);
    usleep(300000);
#pragma omp target device(devices - 1)
    { exit(9); }
    return 1;
  }
  if (!strcmp(mode, "crossing")) {
    // Open MPI's, else Hydra's: without either nothing would cross.
    const char *rank_text = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank_text) rank_text = getenv("PMI_RANK");
    if (!rank_text) return 8;
    int rank = atoi(rank_text);
    int last = devices - 1, host = omp_get_initial_device();
    int from = rank ? last : 0, to = rank ? 0 : last;
    size_t words = (8u << 20) / sizeof(long);
    long *mine = malloc(words * sizeof(long));
    for (size_t i = 0; i < words; i++) mine[i] = (long)(i * 31 + rank);
    long *src = omp_target_alloc(words * sizeof(long), from);
    long *dst = omp_target_alloc(words * sizeof(long), to);
    if (!mine || !src || !dst) return 3;
    if (omp_target_memcpy(src, mine, words * sizeof(long), 0, 0, from, host)) return 4;
    for (int k = 0; k < 50; k++) {
      if (omp_target_memcpy(dst, src, words * sizeof(long), 0, 0, to, from)) return 5;
    }
    memset(mine, 0, words * sizeof(long));
    if (omp_target_memcpy(mine, dst, words * sizeof(long), 0, 0, host, to)) return 6;
    for (size_t i = 0; i < words; i++)
      if (mine[i] != (long)(i * 31 + rank)) return 7;
    omp_target_free(src, from);
    omp_target_free(dst, to);
    free(mine);
    printf("rank %d: crossing copies: ok\n", rank);
    return 0;
  }
#ifdef WITH_MPI
  if (!strcmp(mode, "plain-mpi")) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    int rank = 0, total = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&devices, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double sum = sum_on(devices - 1);
    printf("rank %d: devices %d of %d, sum %.0f\n", rank, devices, total, sum);
    fflush(stdout);
    MPI_Finalize();
    return 0;
  }
  if (!strcmp(mode, "finalize-while-offloading")) {
    int provided = 0, already = 0, last = devices - 1;
    MPI_Initialized(&already);
    if (!already) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    pthread_t thread;
    pthread_create(&thread, NULL, sleepy_region, &last);
    usleep(300000);
    MPI_Finalize();
    pthread_join(thread, NULL);
    printf("finalized while a region ran\n");
    return 0;
  }
  if (!strcmp(mode, "own-mpi")) {
    int provided = 0, rank = 0, size = 0;
    int already = 0;
    MPI_Initialized(&already);  // the offload runtime may have been first
    if (!already) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;  // program ranks are 0 and 1
    long mine = rank + 100, theirs = -1;
    MPI_Request requests[2];
    MPI_Irecv(&theirs, 1, MPI_LONG, peer, 0, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(&mine, 1, MPI_LONG, peer, 0, MPI_COMM_WORLD, &requests[1]);
    double sum = sum_on(devices - 1 - rank);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    printf("rank %d: devices %d, sum %.0f, peer said %ld\n", rank, devices, sum, theirs);
    fflush(stdout);
    MPI_Finalize();
    return theirs == peer + 100 ? 0 : 1;
  }
#endif
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
