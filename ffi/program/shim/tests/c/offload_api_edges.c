// liboffload (`ol*`) at the lifecycle's edges (offload_api_dlopen.c has
// the dlopen/dlclose one):
//   fork        : olInit, fork; the child and the parent each use ol*
//                 and shut down.
//   thread-exit : olInit, then another thread calls exit(0) while this
//                 one keeps calling ol*.
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <offload/OffloadAPI.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static bool count(ol_device_handle_t d, void *data) {
  (void)d;
  ++*(int *)data;
  return true;
}

static int devices(void) {
  int n = 0;
  return olIterateDevices(count, &n) ? -1 : n;
}

static int with_fork(void) {
  if (olInit())
    return 20;
  int before = devices();
  pid_t child = fork();
  if (child == 0) {
    int n = devices();
    int shut = olShutDown() ? 1 : 0;
    _exit(n == before && !shut ? 0 : 21);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 22;
  if (devices() != before || olShutDown())
    return 23;
  printf("forked_devices=%d\n", before);
  return 0;
}

static void *exit_soon(void *arg) {
  (void)arg;
  usleep(20000);
  exit(0);
}

static int thread_exit(void) {
  if (olInit())
    return 30;
  pthread_t thread;
  pthread_create(&thread, NULL, exit_soon, NULL);
  for (;;)
    if (devices() < 2)
      return 31;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "fork") == 0)
    return with_fork();
  if (argc > 1 && strcmp(argv[1], "thread-exit") == 0)
    return thread_exit();
  fprintf(stderr, "usage: %s fork | thread-exit\n", argv[0]);
  return 2;
}
