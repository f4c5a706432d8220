// RELEASES: 19 22
// LLVM 19+'s llvm_omp_target_lock_mem / unlock_mem and
// llvm_omp_target_dynamic_shared_alloc, and the llvm_omp_target_alloc_* /
// llvm_omp_target_free_* pairs, on the host devices: locking host memory
// gives the host address back, the pinned buffer is usable from a region,
// there is no dynamic shared memory on the host.
#include <omp.h>
#include <stdio.h>

void *llvm_omp_target_lock_mem(void *ptr, size_t size, int device_num);
void llvm_omp_target_unlock_mem(void *ptr, int device_num);
void *llvm_omp_target_dynamic_shared_alloc(void);
void *llvm_omp_target_alloc_device(size_t size, int device_num);
void *llvm_omp_target_alloc_host(size_t size, int device_num);
void *llvm_omp_target_alloc_shared(size_t size, int device_num);
void llvm_omp_target_free_device(void *ptr, int device_num);
void llvm_omp_target_free_host(void *ptr, int device_num);
void llvm_omp_target_free_shared(void *ptr, int device_num);

int main(void) {
  int dev = omp_get_default_device();
  int buf[8] = {0};
  int *locked = llvm_omp_target_lock_mem(buf, sizeof buf, dev);
  printf("locked is the host address=%d\n", locked == buf);
  llvm_omp_target_unlock_mem(buf, dev);
  printf("dynamic shared on the host is null=%d\n",
         llvm_omp_target_dynamic_shared_alloc() == NULL);
  int *d = llvm_omp_target_alloc_device(64, dev);
  int *h = llvm_omp_target_alloc_host(64, dev);
  int *s = llvm_omp_target_alloc_shared(64, dev);
  printf("allocs: %d %d %d\n", d != NULL, h != NULL, s != NULL);
  int ok = 0;
#pragma omp target is_device_ptr(d) map(from : ok) device(dev)
  {
    d[0] = 5;
    ok = d[0] == 5;
  }
  printf("device buffer used in a region=%d\n", ok);
  llvm_omp_target_free_device(d, dev);
  llvm_omp_target_free_host(h, dev);
  llvm_omp_target_free_shared(s, dev);
  return ok ? 0 : 1;
}
