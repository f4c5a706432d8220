// CXX
// RELEASES: 19 22
// (LLVM 14's runtime ends it with SIGSEGV after the host destructors, before
// any device destructor prints; ffi/program/shim/tests/lifecycle.rs runs clang 14's.)
// Two `declare target` globals with constructors and destructors that
// print on the device only (the host copies print "host ..."). The device
// copies are constructed when the image is loaded at the first region
// (19/22: the image's .init_array; clang 22 orders it 2, 1) and destroyed
// in the reverse order at exit (.fini_array, when the teardown unloads the
// image, before the device is deinitialised), never after: the last lines
// come after main's exit(0).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static void announce_host(const char *what, int id) { printf("host %s %d\n", what, id); }
static void announce_device(const char *what, int id) { printf("device %s %d\n", what, id); }
#pragma omp declare target(announce_device)

#pragma omp declare variant(announce_device) match(device = {kind(nohost)})
static void announce(const char *what, int id) { announce_host(what, id); }

struct Noisy {
  int id;
  explicit Noisy(int i) : id(i) { announce("constructor", id); }
  ~Noisy() { announce("destructor", id); }
};

Noisy first(1);
Noisy second(2);
#pragma omp declare target(first, second)

int main() {
  printf("main: begin\n");
  fflush(stdout);
  int sum = 0;
#pragma omp target map(from : sum)
  { sum = first.id + second.id; }
  printf("main: device sum %d\n", sum);
  fflush(stdout);
  exit(sum == 3 ? 0 : 1);
}
