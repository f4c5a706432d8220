// RELEASES: 19 22
// (memset, the _async copies and lock_mem are LLVM 19+ calls; LLVM 14's soft failures are invalid_device_api.c's.)
// CHECK-STDERR
// Every omp_* call that takes a device number, given one that names no
// device (one past the last, far past it, -1, -2, -7): LLVM 19 and 22 end
// the process with "Device number 'N' out of range" (fatal error N) once
// the call gets past its own early returns (a null pointer, no bytes, the
// initial device, a rect query, an empty block), also inside the helper
// task of an _async call. lock_mem/unlock_mem refuse even the initial
// device's number; omp_get_mapped_ptr only refuses negative numbers;
// omp_target_is_accessible takes -1 and omp_get_uid_from_device
// omp_invalid_device (-2). Each call runs in a child (this program
// started again through argv[0], as info_levels.c does), and the parent
// prints how each child ended.
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *llvm_omp_target_alloc_device(size_t, int);
void *llvm_omp_target_alloc_host(size_t, int);
void *llvm_omp_target_alloc_shared(size_t, int);
void llvm_omp_target_free_device(void *, int);
void llvm_omp_target_free_host(void *, int);
void llvm_omp_target_free_shared(void *, int);
void *llvm_omp_target_lock_mem(void *, size_t, int);
void llvm_omp_target_unlock_mem(void *, int);

#if __clang_major__ >= 22
#define HAS_LLVM22_CALLS 1
#else
#define HAS_LLVM22_CALLS 0
#endif

static const char *what(const void *p, const void *mine) {
  return p == NULL ? "null" : p == mine ? "its pointer" : "another pointer";
}

// One call with device d; returns 0 if it came back (it prints its result),
// 9 for an unknown name.
static int call(const char *c, int d) {
  int init = omp_get_initial_device();
  int x = 1, y = 0, rc = 0;
  char buf[16] = {0};
  size_t vol[1] = {4}, none[1] = {0}, off[1] = {0}, dim[1] = {8};
  if (!strcmp(c, "alloc"))
    printf("%s, ", what(omp_target_alloc(64, d), NULL));
  else if (!strcmp(c, "alloc_device"))
    printf("%s, ", what(llvm_omp_target_alloc_device(64, d), NULL));
  else if (!strcmp(c, "alloc_host"))
    printf("%s, ", what(llvm_omp_target_alloc_host(64, d), NULL));
  else if (!strcmp(c, "alloc_shared"))
    printf("%s, ", what(llvm_omp_target_alloc_shared(64, d), NULL));
  else if (!strcmp(c, "free"))
    omp_target_free(&y, d);
  else if (!strcmp(c, "free_null"))
    omp_target_free(NULL, d);
  else if (!strcmp(c, "free_device"))
    llvm_omp_target_free_device(&y, d);
  else if (!strcmp(c, "free_host"))
    llvm_omp_target_free_host(&y, d);
  else if (!strcmp(c, "free_shared"))
    llvm_omp_target_free_shared(&y, d);
  else if (!strcmp(c, "is_present"))
    rc = omp_target_is_present(&x, d);
  else if (!strcmp(c, "is_present_null"))
    rc = omp_target_is_present(NULL, d);
  else if (!strcmp(c, "memcpy_to"))
    rc = omp_target_memcpy(&y, &x, sizeof x, 0, 0, d, init);
  else if (!strcmp(c, "memcpy_from"))
    rc = omp_target_memcpy(&y, &x, sizeof x, 0, 0, init, d);
  else if (!strcmp(c, "memcpy_no_bytes"))
    rc = omp_target_memcpy(&y, &x, 0, 0, 0, d, d);
  else if (!strcmp(c, "memcpy_null"))
    rc = omp_target_memcpy(NULL, &x, sizeof x, 0, 0, d, init);
  else if (!strcmp(c, "rect_to"))
    rc = omp_target_memcpy_rect(buf, buf + 8, 1, 1, vol, off, off, dim, dim,
                                d, init);
  else if (!strcmp(c, "rect_from"))
    rc = omp_target_memcpy_rect(buf, buf + 8, 1, 1, vol, off, off, dim, dim,
                                init, d);
  else if (!strcmp(c, "rect_query"))
    rc = omp_target_memcpy_rect(NULL, NULL, 1, 1, vol, off, off, dim, dim, d,
                                d);
  else if (!strcmp(c, "rect_empty"))
    rc = omp_target_memcpy_rect(buf, buf + 8, 1, 1, none, off, off, dim, dim,
                                d, init);
  else if (!strcmp(c, "associate"))
    rc = omp_target_associate_ptr(&x, &y, sizeof x, 0, d);
  else if (!strcmp(c, "associate_null"))
    rc = omp_target_associate_ptr(&x, NULL, sizeof x, 0, d);
  else if (!strcmp(c, "disassociate"))
    rc = omp_target_disassociate_ptr(&x, d);
  else if (!strcmp(c, "memset"))
    printf("%s, ", what(omp_target_memset(buf, 0, sizeof buf, d), buf));
  else if (!strcmp(c, "memset_no_bytes"))
    printf("%s, ", what(omp_target_memset(buf, 0, 0, d), buf));
  else if (!strcmp(c, "memset_async")) {
    void *p = omp_target_memset_async(buf, 0, sizeof buf, d, 0, NULL);
#pragma omp taskwait
    printf("%s, ", what(p, buf));
  } else if (!strcmp(c, "memcpy_async_to")) {
    rc = omp_target_memcpy_async(&y, &x, sizeof x, 0, 0, d, init, 0, NULL);
#pragma omp taskwait
  } else if (!strcmp(c, "memcpy_async_from")) {
    rc = omp_target_memcpy_async(&y, &x, sizeof x, 0, 0, init, d, 0, NULL);
#pragma omp taskwait
  } else if (!strcmp(c, "rect_async")) {
    rc = omp_target_memcpy_rect_async(buf, buf + 8, 1, 1, vol, off, off, dim,
                                      dim, d, init, 0, NULL);
#pragma omp taskwait
  } else if (!strcmp(c, "mapped_ptr"))
    printf("%s, ", what(omp_get_mapped_ptr(&x, d), &x));
  else if (!strcmp(c, "lock_mem"))
    printf("%s, ", what(llvm_omp_target_lock_mem(buf, sizeof buf, d), buf));
  else if (!strcmp(c, "unlock_mem"))
    llvm_omp_target_unlock_mem(buf, d);
#if HAS_LLVM22_CALLS
  else if (!strcmp(c, "is_accessible"))
    rc = omp_target_is_accessible(&x, sizeof x, d);
  else if (!strcmp(c, "uid"))
    printf("%s, ", omp_get_uid_from_device(d) ? "a uid" : "null");
#endif
  else
    return 9;
  printf("rc=%d y=%d\n", rc, y);
  return 0;
}

static int run_child(const char *self, const char *c, int d) {
  char dev[16];
  snprintf(dev, sizeof dev, "%d", d);
  printf("%s(%s): ", c, dev);
  fflush(stdout);
  fprintf(stderr, "-- %s(%s)\n", c, dev);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return 2;
  if (pid == 0) {
    execl(self, self, "call", c, dev, (char *)NULL);
    _exit(3);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid)
    return 4;
  if (WIFSIGNALED(status))
    printf("  ended by %s\n",
           WTERMSIG(status) == SIGABRT ? "SIGABRT" : "another signal");
  else if (WEXITSTATUS(status) != 0)
    printf("  exit %d\n", WEXITSTATUS(status));
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "call"))
    return call(argv[2], atoi(argv[3]));
  int n = omp_get_num_devices();
  int init = omp_get_initial_device();
  int bad[] = {n + 1, -1, -7};
  static const char *calls[] = {
      "alloc",        "alloc_device",      "alloc_host",     "alloc_shared",
      "free",         "free_device",       "free_host",      "free_shared",
      "is_present",   "memcpy_to",         "memcpy_from",    "rect_to",
      "rect_from",    "associate",         "disassociate",   "memset",
      "memset_async", "memcpy_async_to",   "memcpy_async_from",
      "rect_async",   "mapped_ptr",        "lock_mem",       "unlock_mem",
#if HAS_LLVM22_CALLS
      "is_accessible", "uid",
#endif
  };
  // Calls that return before their device lookup.
  static const char *early[] = {
      "free_null",  "is_present_null", "memcpy_no_bytes", "memcpy_null",
      "rect_query", "rect_empty",      "associate_null",  "memset_no_bytes",
  };
  int rc = 0;
  for (unsigned i = 0; i < sizeof calls / sizeof *calls; i++)
    for (unsigned j = 0; j < sizeof bad / sizeof *bad; j++)
      rc |= run_child(argv[0], calls[i], bad[j]);
  for (unsigned i = 0; i < sizeof early / sizeof *early; i++)
    rc |= run_child(argv[0], early[i], 77);
  // Numbers some calls take although they name no device, and the initial
  // device's, which lock_mem refuses.
  rc |= run_child(argv[0], "mapped_ptr", 77);
  rc |= run_child(argv[0], "memset", -2);
  rc |= run_child(argv[0], "lock_mem", init);
  rc |= run_child(argv[0], "unlock_mem", init);
  rc |= run_child(argv[0], "memset", init);
#if HAS_LLVM22_CALLS
  rc |= run_child(argv[0], "uid", -2);
#endif
  return rc;
}
