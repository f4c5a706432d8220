// CHECK-STDERR
// EXTRA-BUILD: {cc} {offload} {debug} -fPIC -shared lib/dlopen_kernels.c -o {out}/libdlopen_kernels.so
// LDFLAGS: -ldl
// ARGS: {out}/libdlopen_kernels.so
// LIBOMPTARGET_INFO is read once per process, so this program runs itself
// again for each value, with a line on stderr naming the value first: each
// info bit alone (16, the plugin's kernel info, prints nothing on the x86_64
// plugin), a combination with a sign and leading blanks, and values that
// std::stoi reads partly ("1abc" is 1, "0x10" is 0, INT_MIN is bit 31
// only). Junk that makes LLVM 14 terminate ("abc") is not compared. Then
// __tgt_set_info_flag turning the output on and off with the variable unset,
// and the table dump after an offload library with a declare target global
// was dlclosed (LLVM 14 still lists that global's mapping). The children
// are started through argv[0] (not /proc/self/exe, which is valgrind's tool
// under valgrind_c.rs; the children then run natively).
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void __tgt_set_info_flag(uint32_t);

static int work(void) {
  int a[4] = {1, 2, 3, 4};
  int s = 0;
#pragma omp target map(to : a) map(tofrom : s)
  for (int i = 0; i < 4; i++)
    s += a[i];
#pragma omp target enter data map(to : a)
#pragma omp target enter data map(alloc : a)
#pragma omp target update from(a)
#pragma omp target map(tofrom : a)
  a[0] = 10;
#pragma omp target exit data map(release : a)
#pragma omp target exit data map(from : a)
  printf("s=%d a[0]=%d\n", s, a[0]);
  return s == 10 && a[0] == 10 ? 0 : 1;
}

static int own_kernel(int x) {
  int r = 0;
#pragma omp target map(from : r)
  r = x + 1;
  return r;
}

static int with_library(const char *path) {
  printf("own=%d\n", own_kernel(1));
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return 3;
  int (*count_call)(void) = (int (*)(void))dlsym(h, "kernels_count_call");
  if (!count_call)
    return 4;
  printf("calls=%d\n", count_call());
  if (dlclose(h) != 0)
    return 5;
  printf("own=%d\n", own_kernel(2));
  return 0;
}

static int run_child(const char *self, const char *mode, const char *value,
                     const char *lib) {
  fflush(stdout);
  fprintf(stderr, "== LIBOMPTARGET_INFO=%s%s%s %s\n", value ? "'" : "(unset)",
          value ? value : "", value ? "'" : "", mode);
  pid_t pid = fork();
  if (pid < 0)
    return 2;
  if (pid == 0) {
    if (value)
      setenv("LIBOMPTARGET_INFO", value, 1);
    else
      unsetenv("LIBOMPTARGET_INFO");
    execl(self, self, lib, mode, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid)
    return 2;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("child %s failed (status %d)\n", mode, status);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libdlopen_kernels.so\n", argv[0]);
    return 2;
  }
  if (argc > 2) {
    if (strcmp(argv[2], "work") == 0)
      return work();
    if (strcmp(argv[2], "set-flag") == 0) {
      int rc = work();
      __tgt_set_info_flag(0x21); // kernel arguments and transfers
      rc |= work();
      __tgt_set_info_flag(0);
      rc |= work();
      return rc;
    }
    if (strcmp(argv[2], "dlopen") == 0)
      return with_library(argv[1]);
    return 2;
  }
  const char *values[] = {"1",    "2",     "4",         "8",
                          "16",   "32",    " \t+40",    "1abc",
                          "0x10", "00002", "-2147483648", "0"};
  int rc = 0;
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
    rc |= run_child(argv[0], "work", values[i], argv[1]);
  rc |= run_child(argv[0], "set-flag", NULL, argv[1]);
#if __clang_major__ < 19
  // LLVM 19 and 22 name the library's global mapping with a pointer into
  // the library and dump it after the dlclose: their runtimes crash (ours
  // keeps a copy of the name), so only LLVM 14 is compared there.
  rc |= run_child(argv[0], "dlopen", "4", argv[1]);
  rc |= run_child(argv[0], "dlopen", "-1", argv[1]);
#endif
  printf("done rc=%d\n", rc);
  return rc;
}
