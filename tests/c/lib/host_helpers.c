// Host-only helpers linked from a static archive (libhost_helpers.a) into
// static_lib_and_dlopen.c: no offload code of its own.
#include "host_helpers.h"

void helpers_fill(int *v, int n, int start) {
  for (int i = 0; i < n; i++)
    v[i] = start + i;
}

unsigned long helpers_checksum(const int *v, int n) {
  unsigned long s = 0;
  for (int i = 0; i < n; i++)
    s = s * 31 + (unsigned long)v[i];
  return s;
}
