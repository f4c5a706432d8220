// A PMPI tool, as mpiP, Score-P or Darshan are: it interposes MPI_Init
// (preloaded), says so, and initialises MPI through PMPI_Init.
#include <mpi.h>
#include <stdio.h>

int MPI_Init(int *argc, char ***argv) {
  printf("tool: MPI_Init intercepted\n");
  fflush(stdout);
  return PMPI_Init(argc, argv);
}
