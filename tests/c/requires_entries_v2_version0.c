// RELEASES: 22
// CHECK-STDERR
// EXIT: SIGABRT
// LLVM 22 reads a host entry table as 56-byte entries whenever its first
// word is zero (upgradeLegacyEntries) and never checks the entries'
// version. LLVM's own offloading/requires.c builds such entries by hand
// with version 0: two REGISTER_REQUIRES entries that disagree on
// reverse_offload (NONE, then REVERSE_OFFLOAD) end the process with
// "omptarget fatal error 2: '#pragma omp requires reverse_offload' not
// used consistently!". (Built for 22 only: 19's runtime reads 32-byte
// entries, see requires_entries_inconsistent.c.)
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  uint64_t reserved;
  uint16_t version;
  uint16_t kind;
  uint32_t flags;
  void *address;
  char *symbol_name;
  uint64_t size;
  uint64_t data;
  void *aux_addr;
} entry56;

typedef struct {
  void *image_start;
  void *image_end;
  entry56 *entries_begin;
  entry56 *entries_end;
} device_image;

typedef struct {
  int32_t num_images;
  device_image *images;
  entry56 *entries_begin;
  entry56 *entries_end;
} bin_desc;

void __tgt_register_lib(bin_desc *desc);
void __tgt_unregister_lib(bin_desc *desc);

enum { REGISTER_REQUIRES = 0x10, REQ_NONE = 1, REQ_REVERSE_OFFLOAD = 2 };

int main(void) {
  entry56 entries[] = {
      {0, 0, 1, REGISTER_REQUIRES, NULL, "", 0, REQ_NONE, NULL},
      {0, 0, 1, REGISTER_REQUIRES, NULL, "", 0, REQ_REVERSE_OFFLOAD, NULL}};
  device_image image = {NULL, NULL, &entries[0], &entries[1] + 1};
  bin_desc bin = {1, &image, &entries[0], &entries[1] + 1};
  printf("registering\n");
  fflush(stdout);
  __tgt_register_lib(&bin);
  printf("not reached: registered\n");
  __tgt_unregister_lib(&bin);
  return 0;
}
