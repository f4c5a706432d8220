// omp_target_alloc / omp_target_memcpy / omp_target_free: explicit device
// buffers used from target regions through is_device_ptr, host<->device,
// device<->device (same and different device) and host<->host copies.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  int n = 32;
  int src[32], dst[32];
  for (int i = 0; i < n; i++) {
    src[i] = i * 3;
    dst[i] = 0;
  }
  int *d1 = omp_target_alloc(n * sizeof(int), dev);
  int *d2 = omp_target_alloc(n * sizeof(int), dev);
  printf("alloc ok=%d\n", d1 != NULL && d2 != NULL);
  int rc = omp_target_memcpy(d1, src, n * sizeof(int), 0, 0, dev, host);
  printf("h2d rc=%d\n", rc);
#pragma omp target is_device_ptr(d1) device(dev)
  for (int i = 0; i < 32; i++)
    d1[i] += 1;
  rc = omp_target_memcpy(d2, d1, 16 * sizeof(int), 0, 16 * sizeof(int), dev, dev);
  printf("d2d (offset src 16) rc=%d\n", rc);
  rc = omp_target_memcpy(dst, d2, 16 * sizeof(int), 4 * sizeof(int), 0, host,
                         dev);
  printf("d2h (offset dst 4) rc=%d dst[3]=%d dst[4]=%d dst[19]=%d dst[20]=%d\n",
         rc, dst[3], dst[4], dst[19], dst[20]);
  int other = omp_get_num_devices() > 1 ? 1 : dev;
  int *o = omp_target_alloc(4 * sizeof(int), other);
  rc = omp_target_memcpy(o, d1, 4 * sizeof(int), 0, 0, other, dev);
  int probe[4] = {0};
  rc |= omp_target_memcpy(probe, o, 4 * sizeof(int), 0, 0, host, other);
  printf("cross-device rc=%d probe=%d %d %d %d\n", rc, probe[0], probe[1],
         probe[2], probe[3]);
  int hh[2] = {0, 0};
  rc = omp_target_memcpy(hh, src, sizeof hh, 0, sizeof(int), host, host);
  printf("h2h rc=%d hh=%d %d\n", rc, hh[0], hh[1]);
  // A zero-length copy succeeds without touching anything, even with NULL.
  printf("zero-length rc=%d\n",
         omp_target_memcpy(NULL, NULL, 0, 0, 0, host, host));
  omp_target_free(o, other);
  omp_target_free(d2, dev);
  omp_target_free(d1, dev);
  omp_target_free(NULL, dev); // no-op
  return (dst[4] == 49 && probe[3] == 10 && hh[1] == 6) ? 0 : 1;
}
