/* y[i] = a * x[i] + y[i]; `a` arrives as the bits of a float in a
 * pointer-sized slot, as clang passes scalars captured by copy. Also a
 * reduction kernel, to have an image with more than one entry. */
#include <string.h>
#include "offload_entry.h"

void saxpy(uintptr_t a_bits, const float *x, float *y, intptr_t n) {
  uint32_t bits = (uint32_t)a_bits;
  float a;
  memcpy(&a, &bits, sizeof a);
  for (intptr_t i = 0; i < n; ++i)
    y[i] = a * x[i] + y[i];
}

void sum_i64(const int64_t *x, intptr_t n, int64_t *out) {
  int64_t s = 0;
  for (intptr_t i = 0; i < n; ++i)
    s += x[i];
  *out = s;
}

OFFLOAD_ENTRY(saxpy)
OFFLOAD_ENTRY(sum_i64)
