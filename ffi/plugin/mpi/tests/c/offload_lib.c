// A shared library with an offload image of its own (registered when it
// is loaded).
int offload_lib_value(void) {
  int v = 0;
#pragma omp target map(tofrom : v)
  { v = 42; }
  return v;
}
