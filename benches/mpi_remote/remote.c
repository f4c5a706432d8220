// Remote devices over MPI against the transport's own limits, in one MPI
// job on one machine (benches/mpi_remote/run.py starts it):
//
//   rank 0  this program, "bench": offloads to remote devices only
//           (OMPTARGET_PLUGINS names the MPI plugin) and measures;
//   rank 1  this program, "echo": the peer of MPI's own ping-pong and
//           bandwidth measurements (it offloads nothing);
//   rank 2  omptarget-mpi-device, serving the remote device.
//
// Ranks 0 and 1 talk over MPI_COMM_WORLD, the plugin and the server over
// their own communicator: the same MPI library, the same transport (shared
// memory on one machine). Every figure is a median over rounds; each
// offload result is checked before it counts. Output: one "name value"
// line per figure (seconds per operation, or bytes per second).
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_PING = 1, TAG_BULK_IN = 2, TAG_BULK_OUT = 3, TAG_DONE = 9 };
enum { ARRAY_INTS = 16 };
static const size_t BULK = 64u << 20;

static int rounds = 7;
static int iterations = 2000;
static int trip_iterations = 20000;  // per round of the two round-trip rows
static int bulk_iterations = 8;

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, compare);
  return v[n / 2];
}

// Waits as the device server does: a receive posted for each kind of
// message before it comes (MPI matches it straight into its buffer: the
// fastest round trip MPI offers), tested in a loop that spins while
// messages come (for 50 ms after the last) and sleeps in naps of 100 us
// when idle, so that it takes no core while the offload rows run
// (oversubscribed, a spinning third process slows the other two).
static void echo(void) {
  // `bulk` receives BULK_IN while posted; `out` is what BULK_OUT sends
  // (a pending receive's buffer is not to be read).
  char *bulk = malloc(BULK), *out = malloc(BULK);
  memset(out, 1, BULK);
  char ping[8], ask[1], done[1], one[1] = {0};
  enum { PING, BULK_IN, BULK_OUT, DONE, KINDS };
  static const int tags[KINDS] = {TAG_PING, TAG_BULK_IN, TAG_BULK_OUT, TAG_DONE};
  void *bufs[KINDS] = {ping, bulk, ask, done};
  int sizes[KINDS] = {8, (int)BULK, 1, 1};
  MPI_Request posted[KINDS];
  for (int k = 0; k < KINDS; k++)
    MPI_Irecv(bufs[k], sizes[k], MPI_BYTE, 0, tags[k], MPI_COMM_WORLD, &posted[k]);
  double last = MPI_Wtime();
  unsigned polls = 0;
  int napping = 0;
  for (;;) {
    int which = MPI_UNDEFINED, flag = 0;
    MPI_Testany(KINDS, posted, &which, &flag, MPI_STATUS_IGNORE);
    if (!flag || which == MPI_UNDEFINED) {
      // As the server's loop: the clock every 64th poll while spinning;
      // once idle for 50 ms, one test per nap.
      if (napping) usleep(100);
      else if (++polls % 64 == 0 && MPI_Wtime() - last > 0.05) napping = 1;
      continue;
    }
    napping = 0;
    last = MPI_Wtime();
    switch (which) {
    case PING:
      MPI_Send(ping, 8, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
      break;
    case BULK_IN:  // rank 0 sent BULK bytes; 1 byte back when in
      MPI_Send(one, 1, MPI_BYTE, 0, TAG_BULK_IN, MPI_COMM_WORLD);
      break;
    case BULK_OUT:  // rank 0 asked with 1 byte; BULK bytes back
      MPI_Send(out, (int)BULK, MPI_BYTE, 0, TAG_BULK_OUT, MPI_COMM_WORLD);
      break;
    default:
      for (int k = 0; k < KINDS; k++) {
        if (k == DONE) continue;
        MPI_Cancel(&posted[k]);
        MPI_Wait(&posted[k], MPI_STATUS_IGNORE);
      }
      free(bulk);
      free(out);
      return;
    }
    MPI_Irecv(bufs[which], sizes[which], MPI_BYTE, 0, tags[which], MPI_COMM_WORLD, &posted[which]);
  }
}

// Before each round: the third process (the server during MPI's rows, the
// echo rank during the offload rows) spins for 50 ms after its last
// message, then naps. Waiting that out makes every round run with it
// asleep, as in a steady state: never three processes spinning on two
// cores, which slows whichever row follows the other's. The wait spins
// rather than sleeps: a sleeping virtual CPU may be descheduled by its
// host, and the round that wakes it pays for it (measured: rounds after a
// sleep ranged from 1.6 to 6.3 us for the same ping-pong).
static void quiet(void) {
  double until = MPI_Wtime() + 0.08;
  while (MPI_Wtime() < until) {
  }
}

// One round of MPI's own ping-pong: seconds per round trip.
static double ping_pong_round(void) {
  char small[8] = {0};
  quiet();
  double start = MPI_Wtime();
  for (int i = 0; i < trip_iterations; i++) {
    MPI_Send(small, 8, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
    MPI_Recv(small, 8, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return (MPI_Wtime() - start) / trip_iterations;
}

// MPI's own bandwidth for BULK bytes, one way then the other: the rate of
// a send acknowledged by the receiver, and of a receive asked for.
static void mpi_bandwidth(char *buf, double *to, double *from) {
  char small[1] = {0};
  double t_to[64], t_from[64];
  for (int r = 0; r < rounds; r++) {
    quiet();
    double start = MPI_Wtime();
    for (int i = 0; i < bulk_iterations; i++) {
      MPI_Send(buf, (int)BULK, MPI_BYTE, 1, TAG_BULK_IN, MPI_COMM_WORLD);
      MPI_Recv(small, 1, MPI_BYTE, 1, TAG_BULK_IN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    t_to[r] = BULK * (double)bulk_iterations / (MPI_Wtime() - start);
    start = MPI_Wtime();
    for (int i = 0; i < bulk_iterations; i++) {
      MPI_Send(small, 1, MPI_BYTE, 1, TAG_BULK_OUT, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)BULK, MPI_BYTE, 1, TAG_BULK_OUT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    t_from[r] = BULK * (double)bulk_iterations / (MPI_Wtime() - start);
  }
  *to = median(t_to, rounds);
  *from = median(t_from, rounds);
}

// One round of empty regions: seconds per region.
static double empty_region_round(int dev) {
  quiet();
  double start = omp_get_wtime();
  for (int i = 0; i < trip_iterations; i++) {
#pragma omp target device(dev)
    {}
  }
  return (omp_get_wtime() - start) / trip_iterations;
}

// The floor and the empty region, round by round in turn, so that both
// see the same machine: (ping-pong, region, region over the ping-pong of
// its own round) medians.
static void round_trips(int dev, double *ping, double *region, double *ratio) {
  double t_ping[64], t_region[64], t_ratio[64];
  for (int r = 0; r < rounds; r++) {
    t_ping[r] = ping_pong_round();
    t_region[r] = empty_region_round(dev);
    t_ratio[r] = t_region[r] / t_ping[r];
  }
  *ping = median(t_ping, rounds);
  *region = median(t_region, rounds);
  *ratio = median(t_ratio, rounds);
}

// `target update` of BULK mapped bytes each way; the device copy is
// checked after the round trips.
static int update_bandwidth(int dev, char *buf, double *to, double *from) {
  size_t n = BULK;
  double t_to[64], t_from[64];
  memset(buf, 3, n);
#pragma omp target enter data map(to : buf[0 : n]) device(dev)
  for (int r = 0; r < rounds; r++) {
    quiet();
    double start = omp_get_wtime();
    for (int i = 0; i < bulk_iterations; i++) {
#pragma omp target update to(buf[0 : n]) device(dev)
    }
    t_to[r] = n * (double)bulk_iterations / (omp_get_wtime() - start);
    start = omp_get_wtime();
    for (int i = 0; i < bulk_iterations; i++) {
#pragma omp target update from(buf[0 : n]) device(dev)
    }
    t_from[r] = n * (double)bulk_iterations / (omp_get_wtime() - start);
  }
  int ok = 1;
#pragma omp target map(tofrom : ok) device(dev)
  {
    for (size_t i = 0; i < n; i += 4096) ok &= buf[i] == 3;
  }
#pragma omp target exit data map(delete : buf[0 : n]) device(dev)
  *to = median(t_to, rounds);
  *from = median(t_from, rounds);
  return ok;
}

// A region mapping 16 arrays of 16 ints tofrom, new each time; every
// element is incremented on the device and checked on the host.
static int a0[ARRAY_INTS], a1[ARRAY_INTS], a2[ARRAY_INTS], a3[ARRAY_INTS], a4[ARRAY_INTS],
    a5[ARRAY_INTS], a6[ARRAY_INTS], a7[ARRAY_INTS], a8[ARRAY_INTS], a9[ARRAY_INTS],
    a10[ARRAY_INTS], a11[ARRAY_INTS], a12[ARRAY_INTS], a13[ARRAY_INTS], a14[ARRAY_INTS],
    a15[ARRAY_INTS];
#define EACH(X) X(a0) X(a1) X(a2) X(a3) X(a4) X(a5) X(a6) X(a7) X(a8) X(a9) X(a10) \
    X(a11) X(a12) X(a13) X(a14) X(a15)

static double region_16_arrays(int dev, int *ok) {
  double t[64];
  int expect = 0;
  for (int r = 0; r < rounds; r++) {
    quiet();
    double start = omp_get_wtime();
    for (int i = 0; i < iterations; i++) {
#pragma omp target device(dev) map(tofrom : a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11, a12, a13, a14, a15)
      {
#define INCREMENT(v) for (int j = 0; j < ARRAY_INTS; j++) v[j]++;
        EACH(INCREMENT)
      }
    }
    t[r] = (omp_get_wtime() - start) / iterations;
    expect += iterations;
  }
  *ok = 1;
#define CHECK(v) for (int j = 0; j < ARRAY_INTS; j++) *ok &= v[j] == expect;
  EACH(CHECK)
  return median(t, rounds);
}

int main(int argc, char **argv) {
  int initialised = 0, provided = 0, rank = 0;
  MPI_Initialized(&initialised);  // the offload runtime may have been first
  if (!initialised) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (getenv("BENCH_QUICK")) {
    rounds = 1;
    iterations = trip_iterations = 20;
    bulk_iterations = 1;
  }
  if (rank == 1) {
    echo();
    MPI_Finalize();
    return 0;
  }
  int devices = omp_get_num_devices();
  if (devices < 1) {
    fprintf(stderr, "no remote device\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *only = getenv("BENCH_REGION16_ONLY");
  if (only) {  // K regions and nothing else: the server counts requests
    rounds = 1;
    iterations = atoi(only);
    int ok = 1;
    if (iterations > 0) region_16_arrays(0, &ok);
    else {
#pragma omp target device(0)
      {}
    }
    char done = 0;
    MPI_Send(&done, 1, MPI_BYTE, 1, TAG_DONE, MPI_COMM_WORLD);
    printf("results_right %d\n", ok);
    MPI_Finalize();
    return ok ? 0 : 1;
  }
  char *buf = malloc(BULK);
  memset(buf, 0, BULK);
  double ping, region, ratio, mpi_to, mpi_from, up_to, up_from;
  round_trips(0, &ping, &region, &ratio);
  mpi_bandwidth(buf, &mpi_to, &mpi_from);
  int ok_update = update_bandwidth(0, buf, &up_to, &up_from);
  int ok_16 = 0;
  double region16 = region_16_arrays(0, &ok_16);
  char done = 0;
  MPI_Send(&done, 1, MPI_BYTE, 1, TAG_DONE, MPI_COMM_WORLD);
  printf("mpi_ping_pong_s %.9f\n", ping);
  printf("mpi_bandwidth_to_Bps %.0f\n", mpi_to);
  printf("mpi_bandwidth_from_Bps %.0f\n", mpi_from);
  printf("empty_region_s %.9f\n", region);
  printf("empty_region_over_ping_pong %.4f\n", ratio);
  printf("update_to_64MiB_Bps %.0f\n", up_to);
  printf("update_from_64MiB_Bps %.0f\n", up_from);
  printf("region_16_arrays_s %.9f\n", region16);
  printf("results_right %d\n", ok_update && ok_16);
  free(buf);
  MPI_Finalize();
  return ok_update && ok_16 ? 0 : 1;
}
