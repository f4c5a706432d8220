//! When the symbols an image references are bound: at their first use for
//! `load_binary` (`RTLD_LAZY`, as LLVM's host plugins load), all at load
//! for `load_binary_flags` with `BIND_NOW`, which refuses an image with a
//! symbol the loader cannot find before any of its code runs.

use crate::helpers::*;
use omptarget_abi::plugin::load_flags;

/// A constructor that leaves a mark (the file `{marker}`), and a kernel that
/// calls a function nothing defines unless `*flag` is 0.
const CALLS_MISSING_C: &str = r#"
#include <stdio.h>

extern void missing_fn(void);

__attribute__((constructor)) static void mark(void) {
  FILE *f = fopen("{marker}", "w");
  if (f)
    fclose(f);
}

void calls_missing(long *flag) {
  if (*flag)
    missing_fn();
  *flag = 42;
}
"#;

#[test]
fn bind_now_refuses_an_undefined_function_and_plain_loads_stay_lazy() {
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("constructor-ran");
    let source = CALLS_MISSING_C.replace("{marker}", marker.to_str().unwrap());
    let so = compile_shared(work.path(), "calls_missing.so", &source);
    let image = ImageFixture::new(std::fs::read(so).unwrap(), &[("calls_missing", 0)]);
    let (_copy, p) = host_plugin();
    let load_binary_flags = p.load_binary_flags.expect("our plugin exports it");
    // SAFETY: the plugin library stays open while `p` lives; `image.desc()`
    // is valid while `image` lives; `flag` is an 8-byte block of device 0
    // from `alloc`, the one argument calls_missing(long *) reads and
    // writes, with 0 in it so that the call of missing_fn is not taken;
    // the block is freed once, and the image unloaded once.
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        let refused = load_binary_flags(0, image.desc(), load_flags::BIND_NOW);
        assert!(refused.is_null(), "bound at load, so refused");
        let reason = p.last_error().unwrap_or_default();
        assert!(
            reason.starts_with("__tgt_rtl_load_binary_flags: ")
                && reason.contains("undefined symbol: missing_fn"),
            "{reason}"
        );
        // The copy in memory was refused; no second try from a file.
        assert!(!reason.contains("from a file"), "{reason}");
        assert!(!marker.exists(), "a refused image runs no constructor");

        // Flags 0 is load_binary: lazily bound, as LLVM's plugins load.
        let table = load_binary_flags(0, image.desc(), 0);
        assert!(!table.is_null(), "{:?}", p.last_error());
        assert!(marker.exists(), "its constructor ran");
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);
        std::fs::remove_file(&marker).unwrap();

        let table = (p.load_binary)(0, image.desc());
        assert!(!table.is_null(), "{:?}", p.last_error());
        let flag = alloc(&p, 0, 8);
        submit(&p, 0, flag, &[0i64]);
        let kernel = entry_addr(table, "calls_missing");
        assert_eq!(run(&p, 0, kernel, &[flag as usize]), OFFLOAD_SUCCESS);
        let mut value = [0i64];
        retrieve(&p, 0, &mut value, flag);
        assert_eq!(value, [42], "the kernel ran without taking the call");
        assert_eq!((p.data_delete)(0, flag), OFFLOAD_SUCCESS);
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);

        // A flag the plugin does not know is refused, before the image is
        // looked at.
        let unknown = load_binary_flags(0, image.desc(), 1 << 31);
        assert!(unknown.is_null());
        let reason = p.last_error().unwrap_or_default();
        assert!(reason.contains("unknown load flags 0x80000000"), "{reason}");

        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}
