// Kernels for benches/rust_api.rs: the launch path's cost by arity.
#include <stdint.h>

void args_1(int32_t *out) { out[0] += 1; }

void args_8(int32_t *out, int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f,
            int32_t g) {
  out[0] += a + b + c + d + e + f + g;
}

void args_12(int32_t *out, int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f,
             int32_t g, int32_t h, int32_t i, int32_t j, int32_t k) {
  out[0] += a + b + c + d + e + f + g + h + i + j + k;
}
