// A C++ host kernel object for offload_api.c: a static object that its
// constructor fills when olCreateProgram loads the object (and its
// destructor frees when the program is unloaded), read by an extern "C"
// kernel.
#include <vector>

namespace {
struct Squares {
  std::vector<long> values;
  Squares() {
    for (long i = 0; i < 10; i++)
      values.push_back(i * i);
  }
};
Squares squares;
} // namespace

extern "C" void squares_into(long *out, long n) {
  for (long i = 0; i < n && i < (long)squares.values.size(); i++)
    out[i] = squares.values[i];
}
