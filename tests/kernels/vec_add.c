/* c[i] = a[i] + b[i] for i < n. */
#include "offload_entry.h"

void vec_add(const float *a, const float *b, float *c, intptr_t n) {
  for (intptr_t i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
}

/* The same with each buffer's length (Slice, SliceMut): only the values
 * below all three lengths. */
void vec_add_slices(const float *a, size_t na, const float *b, size_t nb,
                    float *c, size_t nc) {
  for (size_t i = 0; i < na && i < nb && i < nc; ++i)
    c[i] = a[i] + b[i];
}

OFFLOAD_ENTRY(vec_add)
