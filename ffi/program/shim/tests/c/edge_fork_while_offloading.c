/* fork() while another thread offloads in a loop; the child (only the
 * forking thread survives in it) then runs 200 small target regions with
 * their results checked and exits 0 (1 if a result is wrong). The parent
 * prints `child_status=<exit status or signal+128>`, `child_wrong=<n>`
 * (as the child's stdout line) and `parent_regions_ok=1` once its own
 * offloading thread is stopped with right results, and exits 1 if a child
 * failed or a region was wrong. FORKS forks are made,
 * one after another, each while the thread is busy (the loop stops at a
 * failed child); child_status is the first bad one (or 0).
 *
 * No time window decides anything: a child still alive after the hang
 * limit (argv[1] seconds, default 120) is killed (child_status=137) so
 * that no hung child outlives the test, and alarm() in the child is a
 * second net should the parent itself be killed. */
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 3
#define N 256
#define CHILD_REGIONS 200
#define CHILD_LIMIT_S 120

static atomic_int stop;
static atomic_long busy_regions;
static atomic_int busy_wrong;

static long sum_on_device(int device, int base) {
  int a[N];
  long s = 0;
  for (int i = 0; i < N; i++)
    a[i] = i + base;
#pragma omp target device(device) map(to : a[0 : N]) map(tofrom : s)
  for (int i = 0; i < N; i++)
    s += a[i];
  return s;
}

static long want(int base) { return (long)N * (N - 1) / 2 + (long)N * base; }

static void *busy(void *arg) {
  (void)arg;
  for (int it = 0; !atomic_load(&stop); it++) {
    if (sum_on_device(0, it) != want(it))
      atomic_fetch_add(&busy_wrong, 1);
    atomic_fetch_add(&busy_regions, 1);
  }
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int child(void) {
  int wrong = 0;
  int devices = omp_get_num_devices();
  for (int r = 0; r < CHILD_REGIONS; r++)
    if (sum_on_device(r % (devices > 0 ? devices : 1), r) != want(r))
      wrong++;
  printf("child_wrong=%d\n", wrong);
  fflush(stdout);
  return wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  int limit_s = argc > 1 ? atoi(argv[1]) : CHILD_LIMIT_S;
  if (limit_s <= 0)
    return 2;
  /* The parent offloads before the thread starts: the runtime is up. */
  if (sum_on_device(0, 1) != want(1))
    return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, busy, NULL) != 0)
    return 2;
  int first_bad = 0;
  for (int f = 0; f < FORKS; f++) {
    long seen = atomic_load(&busy_regions);
    while (atomic_load(&busy_regions) < seen + 20)
      usleep(100);
    fflush(stdout);
    double start = now_ms();
    pid_t pid = fork();
    if (pid < 0)
      return 2;
    if (pid == 0) {
      alarm((unsigned)limit_s + 2);
      exit(child());
    }
    int status;
    for (;;) {
      pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid)
        break;
      if (got != 0)
        return 2;
      if (now_ms() - start > limit_s * 1e3)
        kill(pid, SIGKILL);
      usleep(1000);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && first_bad == 0)
      first_bad = code;
    if (code != 0)
      break;
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("child_status=%d\n", first_bad);
  printf("parent_regions_ok=%d\n", atomic_load(&busy_wrong) == 0);
  /* Under valgrind only the status is checked. */
  return first_bad != 0 || atomic_load(&busy_wrong) != 0;
}
