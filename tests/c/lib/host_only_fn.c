// A function of the host program only: compiled without offloading, so no
// device image defines it (image_undefined_function.c calls it in a region).
#include <stdio.h>

void host_only_fn(int *r) {
  printf("host_only_fn called on the device\n");
  *r = -1;
}
