/* A kernel that calls a function nothing defines, on a branch taken only
 * when `*flag` is nonzero. A call is bound at its first run (through the
 * PLT), so loaded lazily (RTLD_LAZY, as LLVM's host plugins load images and
 * the OpenMP layer loads clang's) the object loads and the kernel runs with
 * `*flag == 0`; with `*flag != 0` the loader ends the process ("symbol
 * lookup error: ...: undefined symbol: missing_fn", exit 127). Image::load
 * binds every symbol at load, so it refuses the object ("undefined symbol:
 * missing_fn"). */
#include "offload_entry.h"

extern void missing_fn(void);

void calls_missing(intptr_t *flag) {
  if (*flag)
    missing_fn();
  *flag = 42;
}

OFFLOAD_ENTRY(calls_missing)
