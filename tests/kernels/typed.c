/* Kernels with C parameters of every scalar type, and globals: what the
 * Rust API's typed kernels (omptarget::Kernel<S>) and globals pass and read.
 * Built with `cc -shared -fPIC`; no offload entry section is needed. */
#include <stddef.h>
#include <stdint.h>

/* y[i] = a * x[i]: a float parameter (an SSE register on x86_64). A
 * bare-pointer kernel: how far it reaches is the caller's n. */
void scale_f32(float a, const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] = a * x[i];
}

/* The same with each buffer's length (Slice, SliceMut): it touches only
 * the values below both, whatever the lengths are. */
void scale(float a, const float *x, size_t nx, float *y, size_t ny) {
  for (size_t i = 0; i < nx && i < ny; ++i)
    y[i] = a * x[i];
}

/* Every C scalar type, written back as doubles (out has room for 10). */
void scalars(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
             int64_t g, uint64_t h, float x, double y, double *out, size_t n) {
  if (n < 10)
    return;
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = d;
  out[4] = e;
  out[5] = f;
  out[6] = (double)g;
  out[7] = (double)h;
  out[8] = x;
  out[9] = y;
}

/* A global counter and a global table. */
int32_t counter = 41;
double table[4] = {1.0, 2.0, 3.0, 4.0};

void bump(int32_t by) { counter += by; }

/* out[0] = sum(table) */
void sum_table(double *out, size_t n) {
  if (n < 1)
    return;
  out[0] = table[0] + table[1] + table[2] + table[3];
}

/* Safe to run on several threads at once (atomics only: data-race-free
 * with itself, as Image::kernel asks): `busy` counts the runs in progress,
 * `runs` the runs done; it spins `spins` times in between. */
int32_t busy = 0;
int64_t runs = 0;

void busy_run(uint64_t spins) {
  __atomic_fetch_add(&busy, 1, __ATOMIC_SEQ_CST);
  for (volatile uint64_t i = 0; i < spins; i = i + 1)
    ;
  __atomic_fetch_add(&runs, 1, __ATOMIC_SEQ_CST);
  __atomic_fetch_sub(&busy, 1, __ATOMIC_SEQ_CST);
}

/* Read-only globals: `ro_val` lies in .rodata (a PT_LOAD segment without
 * PF_W), `ro_name` in .data.rel.ro (a pointer needing a relocation, write-
 * protected by the loader once relocated: PT_GNU_RELRO). A host copy into
 * either would fault; the host plugin refuses it. `ro_get` reads them. */
const int32_t ro_val = 7;
const char *const ro_name = "ro";

void ro_get(int32_t *out, size_t n) {
  if (n < 2)
    return;
  out[0] = ro_val;
  out[1] = ro_name[0];
}
