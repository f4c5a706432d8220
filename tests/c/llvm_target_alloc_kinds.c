// LLVM's allocator extensions llvm_omp_target_alloc_host / _shared / _device:
// each returns memory usable from target regions via is_device_ptr and
// released with omp_target_free; on the host device they fall back to malloc.
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_alloc_host(size_t size, int device_num);
void *llvm_omp_target_alloc_shared(size_t size, int device_num);
void *llvm_omp_target_alloc_device(size_t size, int device_num);

int main(void) {
  int dev = omp_get_default_device();
  int host = omp_get_initial_device();
  int *k[3];
  k[0] = llvm_omp_target_alloc_host(8 * sizeof(int), dev);
  k[1] = llvm_omp_target_alloc_shared(8 * sizeof(int), dev);
  k[2] = llvm_omp_target_alloc_device(8 * sizeof(int), dev);
  int ok = 1;
  for (int j = 0; j < 3; j++) {
    int *p = k[j];
    if (!p) {
      printf("kind %d: null\n", j);
      ok = 0;
      continue;
    }
#pragma omp target is_device_ptr(p) firstprivate(j)
    for (int i = 0; i < 8; i++)
      p[i] = 100 * j + i;
    int back[8];
    omp_target_memcpy(back, p, sizeof back, 0, 0, host, dev);
    printf("kind %d: %d %d\n", j, back[0], back[7]);
    if (back[7] != 100 * j + 7)
      ok = 0;
    omp_target_free(p, dev);
  }
  void *h = llvm_omp_target_alloc_device(16, host);
  printf("on host device: %s\n", h ? "non-null" : "null");
  omp_target_free(h, host);
  printf("size 0: %s\n",
         llvm_omp_target_alloc_shared(0, dev) ? "non-null" : "null");
  return ok ? 0 : 1;
}
