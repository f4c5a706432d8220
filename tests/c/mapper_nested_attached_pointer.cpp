// CXX
// RELEASES: 19 22
// (clang 14 crashes compiling the nested mapper.)
// CFLAGS: -Wno-openmp-mapping
// A struct mapped twice in one construct through nested mappers (Outer's
// mapper maps o and o.i, Inner's maps i and i.data[0:10]): the second map
// of the struct finds it with a count of 1, "new" again. LLVM 19 copies
// it to the device again, overwriting the device pointer attached in
// between with the host's, so the region writes the host array and the
// copy back of the device array undoes it (val=0); LLVM 22 copies nothing
// over an attached pointer (val=42; LLVM's lit duplicate_mappings_2.cpp).
// The host pointer is restored either way.
#include <cstdio>

struct Inner {
  int *data;
  Inner(int size) { data = new int[size](); }
  ~Inner() { delete[] data; }
};
#pragma omp declare mapper(Inner i) map(i, i.data[0 : 10])

struct Outer {
  Inner i;
  Outer() : i(10) {}
};
#pragma omp declare mapper(Outer o) map(o, o.i)

int main() {
  Outer o;
  int *host = o.i.data;
#pragma omp target map(tofrom : o)
  { o.i.data[0] = 42; }
  std::printf("host pointer restored=%d val=%d\n", o.i.data == host, host[0]);
  return 0;
}
