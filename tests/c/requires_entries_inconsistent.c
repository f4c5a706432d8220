// RELEASES: 19
// CHECK-STDERR
// EXIT: SIGABRT
// clang 19+ pass `#pragma omp requires` as host entries flagged
// REGISTER_REQUIRES; LLVM 19's registerLib registers every such entry in
// table order. A descriptor (built by hand, as LLVM's own
// offloading/requires.c does) whose two entries disagree on
// reverse_offload (NONE, then REVERSE_OFFLOAD) ends the process with
// "omptarget fatal error 2: '#pragma omp requires reverse_offload' not
// used consistently!". Its one device image has no bytes: the plugins
// answer that it is not theirs, silently. Only the 32-byte entry layout of
// clang 19 is built here (clang 22's runtime reads 56-byte entries).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  void *addr;
  char *name;
  size_t size;
  int32_t flags;
  int32_t data;
} entry32;

typedef struct {
  void *image_start;
  void *image_end;
  entry32 *entries_begin;
  entry32 *entries_end;
} device_image;

typedef struct {
  int32_t num_images;
  device_image *images;
  entry32 *entries_begin;
  entry32 *entries_end;
} bin_desc;

void __tgt_register_lib(bin_desc *desc);
void __tgt_unregister_lib(bin_desc *desc);

enum { REGISTER_REQUIRES = 0x10, REQ_NONE = 1, REQ_REVERSE_OFFLOAD = 2 };

int main(void) {
  entry32 entries[] = {{NULL, "", 0, REGISTER_REQUIRES, REQ_NONE},
                       {NULL, "", 0, REGISTER_REQUIRES, REQ_REVERSE_OFFLOAD}};
  device_image image = {NULL, NULL, &entries[0], &entries[1] + 1};
  bin_desc bin = {1, &image, &entries[0], &entries[1] + 1};
  printf("registering\n");
  fflush(stdout);
  __tgt_register_lib(&bin);
  printf("not reached: registered\n");
  __tgt_unregister_lib(&bin);
  return 0;
}
