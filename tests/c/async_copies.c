// RELEASES: 19 22
// omp_target_memcpy_async and omp_target_memcpy_rect_async (OpenMP 5.1):
// the copies are complete after taskwait (with and without a depend object),
// their return codes, and bad input (NULL with a length) fails.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  int src[24], dst[24];
  for (int i = 0; i < 24; i++) {
    src[i] = i + 100;
    dst[i] = 0;
  }
  int *d = omp_target_alloc(sizeof src, dev);
  int rc = omp_target_memcpy_async(d, src, sizeof src, 0, 0, dev, host, 0, NULL);
#pragma omp taskwait
  printf("h2d async rc=%d\n", rc);
  omp_depend_t obj;
  int token = 0;
#pragma omp depobj(obj) depend(inout : token)
  rc = omp_target_memcpy_async(dst, d, 8 * sizeof(int), 4 * sizeof(int),
                               2 * sizeof(int), host, dev, 1, &obj);
#pragma omp taskwait
#pragma omp depobj(obj) destroy
  printf("d2h async rc=%d dst[3]=%d dst[4]=%d dst[11]=%d dst[12]=%d\n", rc,
         dst[3], dst[4], dst[11], dst[12]);
  // A 2x3 block at (1,1) of a 4x6 array, device to host.
  size_t volume[2] = {2, 3}, zero[2] = {0, 0}, at[2] = {1, 1};
  size_t dims[2] = {4, 6};
  int out[24] = {0};
  rc = omp_target_memcpy_rect_async(out, d, sizeof(int), 2, volume, at, at, dims,
                                    dims, host, dev, 0, NULL);
#pragma omp taskwait
  printf("rect async rc=%d out[7]=%d out[9]=%d out[13]=%d out[15]=%d out[0]=%d\n",
         rc, out[7], out[9], out[13], out[15], out[0]);
  (void)zero;
  omp_target_free(d, dev);
  return dst[4] == 102 && out[7] == 107 ? 0 : 1;
}
