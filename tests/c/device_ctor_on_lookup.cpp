// CXX
// RELEASES: 19 22
// omp_get_mapped_ptr is not in LLVM 14.
// The constructor and destructor of a `declare target` global's device
// copy. LLVM 22 loads a device's pending images (running their
// constructors) whenever any call looks the device up, so the device
// constructor runs inside omp_get_mapped_ptr; LLVM 14 and 19 load images
// only for target constructs, so there it runs at the first region. The
// device copy's destructor runs when its image is unloaded, at the end.
#include <omp.h>
#include <stdio.h>

static void announce_host(const char *what) { printf("host %s\n", what); }
static void announce_device(const char *what) { printf("device %s\n", what); }
#pragma omp declare target(announce_device)

#pragma omp declare variant(announce_device) match(device = {kind(nohost)})
static void announce(const char *what) { announce_host(what); }

struct Counter {
  int value;
  Counter() : value(7) { announce("constructor"); }
  ~Counter() { announce("destructor"); }
};

Counter counter;
#pragma omp declare target(counter)

int main() {
  int dev = omp_get_default_device();
  printf("main: begin\n");
  fflush(stdout);
  void *mapped = omp_get_mapped_ptr(&counter, dev);
  printf("main: omp_get_mapped_ptr gave %s\n", mapped ? "an address" : "NULL");
  fflush(stdout);
  int value = 0;
#pragma omp target map(from : value)
  { value = counter.value; }
  printf("main: device value %d\n", value);
  fflush(stdout);
  return value == 7 ? 0 : 1;
}
