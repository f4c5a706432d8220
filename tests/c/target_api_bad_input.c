// CHECK-STDERR: 14
// (LLVM 19/22's own plugin adds a "PluginInterface" line for malloc(-1).)
// Bad input to the device-memory API where libomptarget 14 behaves
// deterministically: zero and "negative" (huge size_t) sizes, NULL pointers.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int host = omp_get_initial_device();
  int x = 1, y = 2;
  void *p0 = omp_target_alloc(0, dev);
  printf("alloc(0)=%s\n", p0 ? "non-null" : "null");
  void *pn = omp_target_alloc((size_t)-1, dev); // "negative": cannot be met
  printf("alloc(SIZE_MAX)=%s\n", pn ? "non-null" : "null");
  void *ph = omp_target_alloc(0, host);
  printf("alloc(0, host)=%s\n", ph ? "non-null" : "null");
  printf("is_present(NULL)=%d\n", omp_target_is_present(NULL, dev));
  printf("is_present(&x, host)=%d\n", omp_target_is_present(&x, host));
  fflush(stdout);
  int rc = omp_target_memcpy(NULL, &x, sizeof x, 0, 0, dev, host);
  printf("memcpy(dst NULL) rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_memcpy(&y, NULL, sizeof x, 0, 0, host, host);
  printf("memcpy(src NULL) rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_associate_ptr(NULL, &y, 4, 0, dev);
  printf("associate(NULL host) rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_associate_ptr(&x, NULL, 4, 0, dev);
  printf("associate(NULL dev) rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_associate_ptr(&x, &y, 0, 0, dev);
  printf("associate(size 0) rc=%d\n", rc);
  fflush(stdout);
  rc = omp_target_disassociate_ptr(NULL, dev);
  printf("disassociate(NULL) rc=%d\n", rc);
  fflush(stdout);
  omp_target_free(NULL, dev);
  omp_target_free(NULL, host);
  printf("free(NULL) ok\n");
  return 0;
}
