// RELEASES: 19 22
// The _async copies and fill wait for the tasks their dependence objects
// name and are waited for by later tasks depending on what they write,
// as LLVM runs them (a hidden-helper task with the depobjs' dependences).
// Each predecessor task sleeps before it writes, so a copy that ran at
// once (ignoring its dependences) would copy the old values.
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

enum { N = 64 };

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  int src[N], back[N], rect[N];
  for (int i = 0; i < N; i++)
    src[i] = back[i] = rect[i] = -1;
  int *d = omp_target_alloc(sizeof src, dev);
  if (!d)
    return 2;
  omp_depend_t in_src, out_d, in_d;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out : src)
    {
      usleep(100000);
      for (int i = 0; i < N; i++)
        src[i] = i + 1;
    }
#pragma omp depobj(in_src) depend(in : src)
#pragma omp depobj(out_d) depend(out : d)
    omp_depend_t deps[2] = {in_src, out_d};
    int rc = omp_target_memcpy_async(d, src, sizeof src, 0, 0, dev, host, 2,
                                     deps);
    printf("memcpy_async rc=%d\n", rc);
    // Fill the device's first 4 ints with 0 bytes after the copy.
#pragma omp depobj(in_d) depend(inout : d)
    omp_target_memset_async(d, 0, 4 * sizeof(int), dev, 1, &in_d);
    // A 2x4 block at (1,2) of an 8x8 array, device to host, after both.
    size_t volume[2] = {2, 4}, at[2] = {1, 2}, dims[2] = {8, 8};
    rc = omp_target_memcpy_rect_async(rect, d, sizeof(int), 2, volume, at, at,
                                      dims, dims, host, dev, 1, &in_d);
    printf("rect_async rc=%d\n", rc);
#pragma omp task depend(in : d)
    omp_target_memcpy(back, d, sizeof back, 0, 0, host, dev);
#pragma omp depobj(in_src) destroy
#pragma omp depobj(out_d) destroy
  }
#pragma omp depobj(in_d) destroy
  printf("back: %d %d %d %d %d %d\n", back[0], back[3], back[4], back[5],
         back[62], back[63]);
  printf("rect: %d %d %d %d %d %d\n", rect[9], rect[10], rect[13], rect[18],
         rect[21], rect[22]);
  omp_target_free(d, dev);
  return back[4] == 5 && back[0] == 0 && rect[10] == 11 && rect[21] == 22 ? 0
                                                                        : 1;
}
