/* main returns (status 9) while another pthread is inside a kernel that
 * never ends (10 ms sleeps, forever): a runtime that waited for it at exit
 * would never end, so the harness's hang limit, not a time window, is
 * what fails such a runtime. The kernel writes one byte to a pipe
 * (its fd passed firstprivate: the kernel runs in this process) once it
 * has started; main waits for that byte, prints `kernel_started=1` and
 * returns. The process must exit with main's status, leaving the
 * kernel's thread to the OS. With argv[1] = "mapped", the long region
 * maps an array (tofrom) around the kernel. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define N 1024

static int pipe_fds[2];
static int mapped;
static int a[N];

static void *long_kernel(void *arg) {
  (void)arg;
  int fd = pipe_fds[1];
  if (mapped) {
#pragma omp target map(tofrom : a[0 : N]) firstprivate(fd)
    {
      a[0] = 1;
      if (write(fd, "x", 1) != 1)
        a[1] = -1;
      for (;;)
        usleep(10000);
    }
  } else {
#pragma omp target firstprivate(fd)
    {
      if (write(fd, "x", 1) == 1)
        for (;;)
          usleep(10000);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  mapped = argc > 1 && strcmp(argv[1], "mapped") == 0;
  if (pipe(pipe_fds) != 0)
    return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, long_kernel, NULL) != 0)
    return 2;
  char c;
  if (read(pipe_fds[0], &c, 1) != 1)
    return 3;
  printf("kernel_started=1\n");
  fflush(stdout);
  return 9;
}
