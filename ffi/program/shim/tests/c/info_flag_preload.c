// Preloaded (LD_PRELOAD) before a clang-14 offload program: its
// constructor runs before the program's own, which registers the program's
// offload image and so loads the plugins. The info flag set here, before
// any plugin is loaded, must still reach each plugin when it loads.
#include <stdint.h>

void __tgt_set_info_flag(uint32_t);

__attribute__((constructor)) static void set_flag_early(void) {
  __tgt_set_info_flag(0x10);
}
