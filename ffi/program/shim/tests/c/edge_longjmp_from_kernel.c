/* Leaving a target region without returning, by siglongjmp: the kernel
 * raises SIGUSR1, whose handler (installed by the host code; the kernel
 * runs in the same process, so raise() runs it) siglongjmps back to the
 * sigsetjmp point in main. The runtime's launch never returns. The
 * program then prints `jumped=1` and exits with status 5. Arguments
 * (any of): "mapped": the region left maps an array; "again": after the
 * jump, offload again (mapping the same array) and print `again=<result>`
 * (`again=43,<sum>`). */
#include <omp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define N 256

static sigjmp_buf back;

static void on_usr1(int sig) {
  (void)sig;
  siglongjmp(back, 1);
}

int main(int argc, char **argv) {
  int again = 0, mapped = 0;
  for (int i = 1; i < argc; i++) {
    again |= strcmp(argv[i], "again") == 0;
    mapped |= strcmp(argv[i], "mapped") == 0;
  }
  static int a[N];
  for (int i = 0; i < N; i++)
    a[i] = i;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0)
    return 2;
  int s = 0;
#pragma omp target map(tofrom : s)
  s = 42;
  printf("before=%d\n", s);
  fflush(stdout);
  if (sigsetjmp(back, 1) == 0) {
    if (mapped) {
#pragma omp target map(tofrom : a[0 : N])
      {
        a[1] = 7;
        raise(SIGUSR1);
      }
    } else {
#pragma omp target
      raise(SIGUSR1);
    }
    printf("returned=unexpected\n");
    return 1;
  }
  printf("jumped=1\n");
  fflush(stdout);
  if (again) {
    int t = 0;
    long sum = 0;
#pragma omp target map(tofrom : t, sum) map(to : a[0 : N])
    {
      t = 43;
      for (int i = 0; i < N; i++)
        sum += i;
    }
    printf("again=%d,%ld\n", t, sum);
    fflush(stdout);
  }
  return 5;
}
