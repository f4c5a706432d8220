/* c[i] = a[i] + b[i] for i < n. */
#include "offload_entry.h"

void vec_add(const float *a, const float *b, float *c, intptr_t n) {
  for (intptr_t i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
}

OFFLOAD_ENTRY(vec_add)
