// CFLAGS: -fopenmp-version=51
// target data use_device_addr: inside the region, references to the variable
// refer to its device copy; its address is the device address.
#include <omp.h>
#include <stdio.h>

int main(void) {
  int buf[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  int dev = omp_get_default_device();
  int *host = &buf[0];
  int addr_differs = -1;
#pragma omp target data map(tofrom : buf) use_device_addr(buf)
  {
    int *d = &buf[0];
    addr_differs = d != host;
#pragma omp target is_device_ptr(d)
    for (int i = 0; i < 8; i++)
      d[i] = i * 7;
  }
  printf("device address differs=%d buf=%d %d %d\n", addr_differs, buf[0], buf[1],
         buf[7]);
  printf("present after region=%d\n", omp_target_is_present(buf, dev));
  return (addr_differs == 1 && buf[7] == 49) ? 0 : 1;
}
