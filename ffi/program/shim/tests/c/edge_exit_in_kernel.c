/* exit(7) called inside a target region on the host device: the kernel
 * runs in-process, so this is the program's exit, made while the runtime
 * is inside the launch. Must exit with status 7 promptly. With argv[1] =
 * "mapped", the region also maps an array around the exit. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256

int main(int argc, char **argv) {
  int mapped = argc > 1 && strcmp(argv[1], "mapped") == 0;
  int a[N];
  for (int i = 0; i < N; i++)
    a[i] = i;
  /* One normal region first: the runtime is set up and the image loaded. */
  int s = 0;
#pragma omp target map(tofrom : s)
  s = 41 + 1;
  printf("before=%d\n", s);
  fflush(stdout);
  if (mapped) {
#pragma omp target map(tofrom : a[0 : N])
    {
      a[0] = 1;
      exit(7);
    }
  } else {
#pragma omp target
    exit(7);
  }
  printf("after=unreachable\n");
  return 1;
}
