// CXX
// CFLAGS: -fopenmp-version=51
// A mapped object with virtual functions, called through a base pointer
// in a target region (the vtable of the device image), and one made on
// the device.
#include <stdio.h>
#pragma omp declare target
struct Base { virtual int f() { return 1; } virtual ~Base() {} };
struct Derived : Base { int f() override { return 2; } };
#pragma omp end declare target
int main() {
  Derived d;
  int r = 0;
#pragma omp target map(to : d) map(from : r)
  {
    Base *b = &d;
    r = b->f();
  }
  int r2 = 0;
#pragma omp target map(from : r2)
  {
    Derived local;
    Base *b = &local;
    r2 = b->f();
  }
  printf("%d %d\n", r, r2);
  return !(r == 2 && r2 == 2);
}
