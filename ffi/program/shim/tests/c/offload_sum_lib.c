/* An offload shared object: its constructor registers its device image
 * (__tgt_register_lib) and its destructor unregisters it, so each dlopen /
 * dlclose of it is one registration / unregistration. */
#include <omp.h>

/* 1 + 2 + ... + n, computed on device `device`. */
int offload_sum(int n, int device) {
  int s = 0;
#pragma omp target device(device) map(tofrom : s)
  for (int i = 1; i <= n; i++)
    s += i;
  return s;
}
