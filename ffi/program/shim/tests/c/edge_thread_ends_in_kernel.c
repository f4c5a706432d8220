/* A thread ends inside a kernel. argv[1] = "exit": the kernel calls
 * pthread_exit((void *)42); "cancel": the kernel sleeps in a loop of
 * cancellation points (it writes a byte to a pipe first, fd passed
 * firstprivate) and the main thread pthread_cancels it. Both kernels run
 * in a region that maps an array. The main thread joins it (prints
 * `joined=42` or `joined=canceled`), then offloads again, on the same
 * device and mapping the same array (prints `again=<sum>`, want 32640),
 * and returns 0. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define N 256

static int a[N];
static int pipe_fds[2];

static void *ends_in_kernel(void *arg) {
  int cancel = arg != NULL;
  int fd = pipe_fds[1];
#pragma omp target map(tofrom : a[0 : N]) firstprivate(fd, cancel)
  {
    a[0] = 0;
    if (cancel) {
      if (write(fd, "x", 1) == 1)
        for (;;) {
          usleep(1000);
          pthread_testcancel();
        }
    } else {
      pthread_exit((void *)42);
    }
  }
  return (void *)1;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  int cancel = strcmp(argv[1], "cancel") == 0;
  for (int i = 0; i < N; i++)
    a[i] = i;
  if (pipe(pipe_fds) != 0)
    return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, ends_in_kernel, cancel ? (void *)1 : NULL) != 0)
    return 2;
  if (cancel) {
    char c;
    if (read(pipe_fds[0], &c, 1) != 1)
      return 3;
    pthread_cancel(thread);
  }
  void *value = NULL;
  if (pthread_join(thread, &value) != 0)
    return 3;
  if (value == PTHREAD_CANCELED)
    printf("joined=canceled\n");
  else
    printf("joined=%ld\n", (long)value);
  fflush(stdout);
  long sum = 0;
#pragma omp target map(to : a[0 : N]) map(tofrom : sum)
  for (int i = 0; i < N; i++)
    sum += i;
  printf("again=%ld\n", sum);
  return 0;
}
