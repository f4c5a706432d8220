// liboffload (`ol*`) at the lifecycle's edges (offload_api_dlopen.c has
// the dlopen/dlclose one):
//   fork        : olInit, fork; the child and the parent each use ol*
//                 and shut down.
//   thread-exit : olInit, then another thread calls exit(0) while this
//                 one keeps calling ol*.
//   queue-fork  : fork while a host function holds a queue back: the
//                 child cannot use the parent's queue (INVALID_QUEUE),
//                 makes its own and shuts down; the parent lets its
//                 function go, finds the copy queued behind it done, and
//                 shuts down.
//   queue-exit  : exit(0) from main while a host function blocks a queue
//                 for ever and a copy waits behind it (no olShutDown).
//   queue-idle  : exit(0) from main with a queue whose worker is idle
//                 (no olDestroyQueue, no olShutDown).
//   fork-in-function : a host function forks; the child's copy of the
//                 queue's worker ends there (the child ends with status
//                 0), and the host function queued behind it runs once,
//                 in the parent.
//   thread-exit-in-queue : a host function calls pthread_exit: the next
//                 olSyncQueue fails with BACKEND_FAILURE, and the queue's
//                 next host function runs.
//   leaky       : a queue, an event and a block never destroyed or freed,
//                 then the last olShutDown (which releases them).
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

// The first device (a runtime one: the host device is listed last).
static bool first(ol_device_handle_t d, void *data) {
  *(ol_device_handle_t *)data = d;
  return false;
}

// olInit, the first device and a queue on it: 0, or non-zero.
static int device_and_queue(ol_device_handle_t *device,
                            ol_queue_handle_t *queue) {
  return olInit() || olIterateDevices(first, device) || !*device ||
         olCreateQueue(*device, queue);
}

static volatile int released, holding;

// A host function that waits until `released` is set (for ever if never).
static void hold(void *data) {
  (void)data;
  holding = 1;
  while (!released)
    usleep(1000);
}

static void note(void *data) { ++*(int *)data; }

// olInit, the first device, 64 bytes of its memory, and a queue on it
// held back by `hold`.
static int held_queue(ol_device_handle_t *device, ol_queue_handle_t *queue,
                      void **mem) {
  if (device_and_queue(device, queue))
    return 40;
  if (olMemAlloc(*device, OL_ALLOC_TYPE_DEVICE, 64, mem))
    return 41;
  if (olLaunchHostFunction(*queue, hold, NULL))
    return 42;
  return 0;
}

// The last device: the host.
static bool last_device(ol_device_handle_t d, void *data) {
  *(ol_device_handle_t *)data = d;
  return true;
}

static int queue_fork(void) {
  ol_device_handle_t device = NULL, host = NULL;
  ol_queue_handle_t queue = NULL;
  void *mem = NULL;
  static char src[64] = "queued behind a host function", back[64];
  int setup = held_queue(&device, &queue, &mem);
  if (setup)
    return setup;
  olIterateDevices(last_device, &host);
  if (olMemcpy(queue, mem, device, src, host, sizeof src))
    return 43;
  bool empty = true;
  if (olGetQueueInfo(queue, OL_QUEUE_INFO_EMPTY, sizeof empty, &empty) || empty)
    return 44;
  pid_t child = fork();
  if (child == 0) {
    ol_result_t parents = olSyncQueue(queue);
    if (!parents || parents->Code != OL_ERRC_INVALID_QUEUE)
      _exit(50);
    ol_queue_handle_t own = NULL;
    int ran = 0;
    if (olCreateQueue(device, &own) || olLaunchHostFunction(own, note, &ran) ||
        olSyncQueue(own) || ran != 1)
      _exit(51);
    _exit(olShutDown() ? 52 : 0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "child: status %d\n", WEXITSTATUS(status));
    return 45;
  }
  released = 1;
  if (olSyncQueue(queue) ||
      olMemcpy(NULL, back, host, mem, device, sizeof back) ||
      memcmp(src, back, sizeof src) != 0)
    return 46;
  if (olMemFree(mem) || olDestroyQueue(queue) || olShutDown())
    return 47;
  printf("queue_fork=ok\n");
  return 0;
}

static int queue_exit(void) {
  ol_device_handle_t device = NULL, host = NULL;
  ol_queue_handle_t queue = NULL;
  void *mem = NULL;
  static char src[64] = "never copied";
  int setup = held_queue(&device, &queue, &mem);
  if (setup)
    return setup;
  olIterateDevices(last_device, &host);
  if (olMemcpy(queue, mem, device, src, host, sizeof src))
    return 48;
  // The worker is inside the program's code when the process exits.
  while (!holding)
    usleep(1000);
  printf("queue_exit=exiting\n");
  fflush(stdout);
  exit(0);
}

static int queue_idle(void) {
  ol_device_handle_t device = NULL;
  ol_queue_handle_t queue = NULL;
  int ran = 0;
  if (device_and_queue(&device, &queue) ||
      olLaunchHostFunction(queue, note, &ran) || olSyncQueue(queue) || ran != 1)
    return 49;
  printf("queue_idle=exiting\n");
  fflush(stdout);
  exit(0);
}

static int child_status = -1;

static void fork_here(void *data) {
  (void)data;
  pid_t child = fork();
  if (child == 0)
    return; // the child's worker ends after this function
  int status = 0;
  waitpid(child, &status, 0);
  child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static int fork_in_function(void) {
  ol_device_handle_t device = NULL;
  ol_queue_handle_t queue = NULL;
  int ran = 0;
  if (device_and_queue(&device, &queue) ||
      olLaunchHostFunction(queue, fork_here, NULL) ||
      olLaunchHostFunction(queue, note, &ran) || olSyncQueue(queue))
    return 62;
  if (child_status != 0 || ran != 1) {
    fprintf(stderr, "child status %d, ran %d\n", child_status, ran);
    return 63;
  }
  if (olDestroyQueue(queue) || olShutDown())
    return 64;
  printf("fork_in_function=ok\n");
  return 0;
}

static void end_thread(void *data) {
  (void)data;
  pthread_exit(NULL);
}

static int thread_exit_in_queue(void) {
  ol_device_handle_t device = NULL;
  ol_queue_handle_t queue = NULL;
  int ran = 0;
  if (device_and_queue(&device, &queue) ||
      olLaunchHostFunction(queue, end_thread, NULL))
    return 70;
  ol_result_t failed = olSyncQueue(queue);
  if (!failed || failed->Code != OL_ERRC_BACKEND_FAILURE)
    return 71;
  if (olLaunchHostFunction(queue, note, &ran) || olSyncQueue(queue) || ran != 1)
    return 72;
  if (olDestroyQueue(queue) || olShutDown())
    return 73;
  printf("thread_exit_in_queue=ok\n");
  return 0;
}

static int leaky(void) {
  ol_device_handle_t device = NULL;
  ol_queue_handle_t queue = NULL;
  ol_event_handle_t event = NULL;
  void *mem = NULL;
  if (device_and_queue(&device, &queue) || olCreateEvent(queue, &event) ||
      olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, 96, &mem))
    return 60;
  if (olShutDown())
    return 61;
  printf("leaky=shut-down\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "fork") == 0)
    return with_fork();
  if (argc > 1 && strcmp(argv[1], "thread-exit") == 0)
    return thread_exit();
  if (argc > 1 && strcmp(argv[1], "queue-fork") == 0)
    return queue_fork();
  if (argc > 1 && strcmp(argv[1], "queue-exit") == 0)
    return queue_exit();
  if (argc > 1 && strcmp(argv[1], "queue-idle") == 0)
    return queue_idle();
  if (argc > 1 && strcmp(argv[1], "leaky") == 0)
    return leaky();
  if (argc > 1 && strcmp(argv[1], "thread-exit-in-queue") == 0)
    return thread_exit_in_queue();
  if (argc > 1 && strcmp(argv[1], "fork-in-function") == 0)
    return fork_in_function();
  fprintf(stderr, "usage: %s fork | thread-exit | queue-fork | queue-exit | queue-idle | leaky | fork-in-function | thread-exit-in-queue\n", argv[0]);
  return 2;
}
