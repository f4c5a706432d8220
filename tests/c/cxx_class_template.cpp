// CXX
// C++: a class template whose methods offload work on their own data (mapped
// through this->), a templated free function instantiated for several types,
// a lambda inside a target region, and a std::vector's buffer mapped through
// data().
#include <cstdio>
#include <vector>

template <typename T, int N> class Matrix {
public:
  T v[N * N];
  void fill_on_device(T base) {
#pragma omp target map(tofrom : this->v[0 : N * N]) firstprivate(base)
    for (int i = 0; i < N * N; i++)
      v[i] = base + static_cast<T>(i);
  }
  T trace_on_device() const {
    T t = 0;
#pragma omp target map(to : this->v[0 : N * N]) map(tofrom : t)
    for (int i = 0; i < N; i++)
      t += v[i * N + i];
    return t;
  }
};

template <typename T> T dot(const T *a, const T *b, int n) {
  T s = 0;
#pragma omp target teams distribute parallel for map(to : a[0 : n], b[0 : n]) \
    reduction(+ : s)
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

int main() {
  Matrix<int, 4> mi;
  mi.fill_on_device(10);
  Matrix<double, 3> md;
  md.fill_on_device(0.5);
  int ti = mi.trace_on_device();
  double td = md.trace_on_device();
  std::vector<long> a(50), b(50);
  for (int i = 0; i < 50; i++) {
    a[i] = i;
    b[i] = 2;
  }
  long dl = dot(a.data(), b.data(), 50);
  float fa[3] = {1.5f, 2.0f, -1.0f}, fb[3] = {2.0f, 0.25f, 4.0f};
  float df = dot(fa, fb, 3);
  int lam = 0;
#pragma omp target map(from : lam)
  {
    auto sq = [](int x) { return x * x; };
    lam = sq(9) + sq(2);
  }
  std::printf("trace int=%d double=%g dot long=%ld float=%g lambda=%d\n", ti,
              td, dl, df, lam);
  return (ti == 70 && td == 13.5 && dl == 2450 && df == -0.5f && lam == 85)
             ? 0
             : 1;
}
