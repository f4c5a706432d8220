// RELEASES: 19 22
// CHECK-STDERR
// omp_target_memset and omp_target_memset_async (OpenMP 5.1, LLVM 19+):
// fill device memory and host memory, zero length and NULL are no-ops that
// return the pointer, the async variant completes by taskwait.
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int host = omp_get_initial_device();
  int dev = omp_get_default_device();
  unsigned char buf[64];
  unsigned char *d = omp_target_alloc(sizeof buf, dev);
  void *r = omp_target_memset(d, 0xab, sizeof buf, dev);
  printf("memset returns its pointer=%d\n", r == d);
  memset(buf, 0, sizeof buf);
  omp_target_memcpy(buf, d, sizeof buf, 0, 0, host, dev);
  printf("device filled: buf[0]=%#x buf[63]=%#x\n", buf[0], buf[63]);
  r = omp_target_memset(d + 8, 0x11, 8, dev);
  omp_target_memcpy(buf, d, sizeof buf, 0, 0, host, dev);
  printf("part: buf[7]=%#x buf[8]=%#x buf[15]=%#x buf[16]=%#x ret=%d\n", buf[7],
         buf[8], buf[15], buf[16], r == d + 8);
  printf("zero length returns ptr=%d\n", omp_target_memset(d, 1, 0, dev) == d);
  printf("null returns null=%d\n", omp_target_memset(NULL, 1, 4, dev) == NULL);
  unsigned char hbuf[16];
  r = omp_target_memset(hbuf, 7, sizeof hbuf, host);
  printf("host memset: %d %d ret=%d\n", hbuf[0], hbuf[15], r == hbuf);
  r = omp_target_memset_async(d, 0x5a, sizeof buf, dev, 0, NULL);
#pragma omp taskwait
  omp_target_memcpy(buf, d, sizeof buf, 0, 0, host, dev);
  printf("async: buf[0]=%#x buf[63]=%#x ret=%d\n", buf[0], buf[63], r == d);
  int sum = 0;
#pragma omp target is_device_ptr(d) map(tofrom : sum) device(dev)
  for (int i = 0; i < 64; i++)
    sum += d[i];
  printf("kernel sees the fill: sum=%d\n", sum);
  omp_target_free(d, dev);
  return sum == 64 * 0x5a ? 0 : 1;
}
