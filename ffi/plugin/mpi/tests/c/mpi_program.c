// An MPI program, written as users write MPI + OpenMP offload programs,
// run with device servers spawned for each rank (OMPTARGET_MPI_SPAWN):
// its MPI_COMM_WORLD must hold its own ranks only. argv[1] chooses:
//   init-first      MPI_Init in main, unconditionally (no MPI_Initialized
//                   check), then: offload to every device, collectives and
//                   a ring of point-to-point messages on MPI_COMM_WORLD,
//                   offload again, MPI_Finalize
//   offload-first   offloads to every device before MPI_Init_thread
//                   (MPI_THREAD_FUNNELED asked), then as init-first
//   finalize-then-offload  MPI_Init, offload, MPI_Finalize, then a region
//                   on the last (remote) device: a clear error
//   pmpi-init       as init-first, initialising with PMPI_Init (the
//                   profiling name Fortran bindings and tools call)
//   manager         a plain MPI program that spawns one `worker` (this
//                   program, argv[1] = worker) with MPI_Comm_spawn and
//                   prints what the worker sends back
//   worker          spawned by `manager`: offloads to every device and
//                   sends the device count and the sum to its parent
//   no-mpi          links MPI but, this run, never calls it: offloads to
//                   every device and returns
//   silent-then-finalize READY GO  MPI_Init; offloads; writes the file
//                   READY, waits for GO (the test stops the last server
//                   meanwhile), allocates on the last device (a failure
//                   the program handles: NULL) and finalises MPI
// Each rank prints one line (`rank R of N: ...`); rank 0 prints the
// collectives' results.
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { N = 4096 };
static double data[N];

static double sum_on(int device) {
  double sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : data) device(device)
  for (int i = 0; i < N; i++) sum += data[i];
  return sum;
}

// Every device's sum, added: devices x 12285 when each computed.
static double every_device(void) {
  double total = 0;
  for (int d = 0; d < omp_get_num_devices(); d++) total += sum_on(d);
  return total;
}

// Collectives and a ring on MPI_COMM_WORLD; 0 when all agree.
static int talk(int rank, int size, int *world_sum, int *ring_from) {
  int one = 1;
  if (MPI_Allreduce(&one, world_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  int root_says = rank == 0 ? 42 : -1;
  if (MPI_Bcast(&root_says, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, ring_from, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return 1;
  return root_says == 42 && *ring_from == prev ? 0 : 1;
}

// The manager and worker modes; 0 when all went well.
static int manage(int argc, char **argv, int worker) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  if (worker) {
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) return 3;
    double said[2] = {omp_get_num_devices(), every_device()};
    MPI_Send(said, 2, MPI_DOUBLE, 0, 5, parent);
    MPI_Comm_disconnect(&parent);
  } else {
    char *args[] = {"worker", NULL};
    MPI_Comm workers;
    if (MPI_Comm_spawn(argv[0], args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &workers,
                       MPI_ERRCODES_IGNORE) != MPI_SUCCESS)
      return 4;
    double said[2] = {0, 0};
    MPI_Recv(said, 2, MPI_DOUBLE, 0, 5, workers, MPI_STATUS_IGNORE);
    printf("manager: the worker has %.0f devices, sum %.0f\n", said[0], said[1]);
    fflush(stdout);
    MPI_Comm_disconnect(&workers);
  }
  return MPI_Finalize() == MPI_SUCCESS ? 0 : 5;
}

// Taken, so that a non-PIE build has a canonical PLT entry for MPI_Init
// (what dlsym then answers with).
void *volatile mpi_init_address;

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "init-first";
  mpi_init_address = (void *)MPI_Init;
  for (int i = 0; i < N; i++) data[i] = i % 7;
  if (!strcmp(mode, "no-mpi")) {
    printf("no MPI: devices %d, sum %.0f\n", omp_get_num_devices(), every_device());
    return 0;
  }
  if (!strcmp(mode, "silent-then-finalize") && argc > 3) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    int last = omp_get_num_devices() - 1;
    printf("before: %.0f\n", sum_on(last));
    fflush(stdout);
    FILE *ready = fopen(argv[2], "w");
    if (!ready) return 3;
    fclose(ready);
    FILE *go;
    while (!(go = fopen(argv[3], "r"))) usleep(10000);
    fclose(go);
    void *p = omp_target_alloc(64, last);
    printf("alloc: %s\n", p ? "ok" : "failed");
    fflush(stdout);
    return MPI_Finalize() == MPI_SUCCESS ? 0 : 4;
  }
  if (!strcmp(mode, "manager") || !strcmp(mode, "worker"))
    return manage(argc, argv, !strcmp(mode, "worker"));
  int devices = omp_get_num_devices();
  double before = 0;
  int provided = -1;
  if (!strcmp(mode, "offload-first")) {
    before = every_device();
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 2;
  } else if (!strcmp(mode, "pmpi-init")) {
    if (PMPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    before = every_device();
  } else {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    before = every_device();
  }
  int rank = -1, size = -1, world_sum = 0, ring_from = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = talk(rank, size, &world_sum, &ring_from);
  double after = every_device();
  printf("rank %d of %d: devices %d, sums %.0f %.0f, world sum %d, ring from %d%s%s\n", rank, size,
         devices, before, after, world_sum, ring_from, bad ? ", WRONG" : "",
         provided >= MPI_THREAD_FUNNELED ? ", thread level ok" : "");
  fflush(stdout);
  if (MPI_Finalize() != MPI_SUCCESS) return 3;
  if (!strcmp(mode, "finalize-then-offload")) {
    printf("rank %d after MPI_Finalize: %.0f\n", rank, sum_on(devices - 1));
    fflush(stdout);
  }
  return bad;
}
