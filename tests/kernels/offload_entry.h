/* Declares a kernel in the object's `omp_offloading_entries` section, the
 * way clang does for OpenMP target regions, so that plugins which find
 * entries through that section (LLVM 14's x86_64 plugin) can load these
 * objects too. The order of OFFLOAD_ENTRY lines is the entry order the
 * runtime must be given. Kernels take pointer-sized parameters only. */
#ifndef OMPTARGET_TEST_OFFLOAD_ENTRY_H
#define OMPTARGET_TEST_OFFLOAD_ENTRY_H

#include <stddef.h>
#include <stdint.h>

struct omptarget_offload_entry {
  void *addr;
  const char *name;
  size_t size;
  int32_t flags;
  int32_t reserved;
};

#define OFFLOAD_ENTRY(fn)                                                      \
  __attribute__((section("omp_offloading_entries"), used))                     \
  struct omptarget_offload_entry fn##_offload_entry = {(void *)fn, #fn, 0, 0, 0};

#endif
