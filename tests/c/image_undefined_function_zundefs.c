// EXTRA-BUILD: {cc} {debug} -c lib/host_only_fn.c -o {out}/host_only_fn.o
// LDFLAGS: {out}/host_only_fn.o -Xoffload-linker -z -Xoffload-linker undefs
// RELEASES: 19 22
// (image_undefined_function.c for clang 14, whose driver has no
// -Xoffload-linker; clang 19 and 22 link device images with --no-undefined,
// which `-z undefs` lifts.)
// The device image references a function nothing it loads with defines,
// from a branch the region does not take: LLVM 19's and 22's host plugins
// load images lazily (llvm::sys::DynamicLibrary: RTLD_LAZY | RTLD_GLOBAL),
// so the image loads and the region runs; ours too.
#include "lib/undefined_function_region.h"
