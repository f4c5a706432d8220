// Host kernels for offload_api.c: an x86_64 shared object that
// olCreateProgram loads on a host device. Each kernel parameter takes one
// 8-byte slot of olLaunchKernel's argument block (docs/liboffload.md).
int counter = 5;

void add(int *x, long n, long delta) {
  for (long i = 0; i < n; i++)
    x[i] += (int)delta;
  counter++;
}
