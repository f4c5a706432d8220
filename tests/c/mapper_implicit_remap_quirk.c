// RELEASES: 14 19
// (LLVM 22's runtime no longer has this quirk; ours keeps LLVM 14's.)
// LLVM 14 quirk with a default mapper (declare mapper(Array a) map(a,
// a.buf[0:a.len])) on data already mapped by target enter data:
// 1. the implicit map of x in a later target region copies the struct to the
//    device again although it is present, overwriting the device copy of
//    x.buf (attached to the device buffer) with the host pointer; the kernel
//    then writes the HOST buffer (possible only because the x86_64 "device"
//    shares the address space) and the device buffer keeps the old values;
// 2. target update from(x) copies that stale device buffer back over them;
// 3. target exit data map(delete: x) removes the buffer's mapping but leaves
//    the struct itself mapped.
// A replacement runtime has to reproduce exactly this to be a drop-in.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int len;
  int *buf;
} Array;

#pragma omp declare mapper(Array a) map(a, a.buf[0 : a.len])

int main(void) {
  int dev = omp_get_default_device();
  Array x;
  x.len = 4;
  x.buf = malloc(4 * sizeof(int));
  int *host_buf = x.buf;
  for (int i = 0; i < 4; i++)
    x.buf[i] = i + 1;
#pragma omp target enter data map(to : x)
#pragma omp target
  for (int i = 0; i < x.len; i++)
    x.buf[i] *= 10;
  printf("host buffer after kernel: %d %d %d %d (x.buf unchanged=%d)\n",
         host_buf[0], host_buf[1], host_buf[2], host_buf[3], x.buf == host_buf);
#pragma omp target update from(x)
  printf("after update from: %d %d %d %d\n", x.buf[0], x.buf[1], x.buf[2],
         x.buf[3]);
#pragma omp target exit data map(delete : x)
  printf("after delete: struct present=%d buffer present=%d\n",
         omp_target_is_present(&x, dev), omp_target_is_present(host_buf, dev));
  free(host_buf);
  return 0;
}
