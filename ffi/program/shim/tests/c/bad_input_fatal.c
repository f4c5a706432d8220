/* Bad input that LLVM 14 treats as fatal under the default (mandatory)
 * offload policy: the process must end with LLVM's messages and abort(),
 * not crash somewhere else. argv[1] picks the case. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void __tgt_target_data_begin(int64_t device_id, int32_t arg_num, void **base, void **begin,
                             int64_t *sizes, int64_t *types);

#define OMP_TGT_MAPTYPE_TO 0x1

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc != 2)
    return 2;
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("first_region=%d\n", x);
  if (strcmp(argv[1], "negative_map_size") == 0) {
    void *base[1] = {&x};
    int64_t sizes[1] = {-4};
    int64_t types[1] = {OMP_TGT_MAPTYPE_TO};
    __tgt_target_data_begin(0, 1, base, base, sizes, types);
  } else if (strcmp(argv[1], "bad_device_data") == 0) {
    __tgt_target_data_begin(77, 0, NULL, NULL, NULL, NULL);
  } else if (strcmp(argv[1], "bad_device_region") == 0) {
    int device = 77;
#pragma omp target device(device) map(tofrom : x)
    x += 1;
  } else {
    return 2;
  }
  printf("survived=%d\n", x);
  return 0;
}
