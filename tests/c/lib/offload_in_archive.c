// Offload code placed in a static archive (see
// static_lib_offload_unsupported.c): clang 14's driver does not unbundle
// device code out of archives, so the host entry ends up without device code.
int archive_square_sum(int n) {
  int s = 0;
#pragma omp target map(tofrom : s)
  for (int i = 0; i < n; i++)
    s += i * i;
  return s;
}
