// EXTRA-BUILD: {cc} {debug} -c lib/host_only_fn.c -o {out}/host_only_fn.o
// LDFLAGS: {out}/host_only_fn.o
// RELEASES: 14
// (clang 19 and 22 link device images with --no-undefined:
// image_undefined_function_zundefs.c is this program for them.)
// The device image references a function nothing it loads with defines,
// from a branch the region does not take. LLVM's host plugins load images
// lazily (RTLD_LAZY), so the image loads and the region runs (with
// LD_BIND_NOW=1 LLVM refuses the image); the OpenMP path of ours loads
// clang's images the same way. Only the Rust API's Image::load binds every
// symbol at load and refuses such an image.
#include "lib/undefined_function_region.h"
