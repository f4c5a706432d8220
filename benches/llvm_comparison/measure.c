// Run a program and print its wall time and peak RSS: "wall_ns N" and
// "peak_rss_kb N" on stderr, its exit status as ours. compare.py measures
// whole processes through it: a child forked from a small process reports
// its own peak RSS (a child of Python would report at least Python's, as
// exec keeps the old address space's high-water mark).
//
// Build: cc -O2 benches/llvm_comparison/measure.c -o measure
// Run:   ./measure PROGRAM ARGS...
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PROGRAM ARGS...\n", argv[0]);
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 2;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    perror("exec");
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid) {
    perror("wait4");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "wall_ns %lld\npeak_rss_kb %ld\n",
          (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
          ru.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
