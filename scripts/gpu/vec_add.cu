// The cubin of scripts/gpu-check.sh's Rust API check, built by
// scripts/gpu-build.sh with clang-19 (CUDA, device only, no CUDA headers:
// -nocudainc -nocudalib), sm_90: a plain kernel, no OpenMP device runtime.
extern "C" __attribute__((global)) void vec_add(const float *a, const float *b, float *c, int n) {
  int i = __nvvm_read_ptx_sreg_ctaid_x() * __nvvm_read_ptx_sreg_ntid_x() +
          __nvvm_read_ptx_sreg_tid_x();
  if (i < n)
    c[i] = a[i] * 2.0f + b[i];
}
