// CXX
// C++ objects with constructors and destructors around offloading: a global
// object whose constructor runs a target region before main, a declare target
// global with a dynamic initialiser, and a destructor that offloads during
// exit (before libomptarget's own teardown).
#include <cstdio>

static int compute_on_device(int x) {
  int r = 0;
#pragma omp target map(from : r)
  r = x * 3;
  return r;
}

struct Early {
  int value;
  Early() : value(compute_on_device(14)) {}
  ~Early() {
    int v = compute_on_device(value);
    std::printf("destructor offload result=%d\n", v);
  }
};

static Early early;

#pragma omp declare target
int dev_table[4] = {1, 2, 3, 4};
#pragma omp end declare target

int main() {
  int s = 0;
#pragma omp target map(tofrom : s)
  for (int i = 0; i < 4; i++)
    s += dev_table[i];
  std::printf("constructor offload result=%d table sum=%d\n", early.value, s);
  return (early.value == 42 && s == 10) ? 0 : 1;
}
