//! Registration of host binaries: `__tgt_register_requires`,
//! `__tgt_register_lib`, `__tgt_unregister_lib`, `__tgt_init_all_rtls`.
//!
//! clang-14 emits, per binary or shared object with offload entries, a
//! global constructor that calls `__tgt_register_requires` and
//! `__tgt_register_lib`, and a `.fini_array` entry that calls
//! `__tgt_unregister_lib`. The unregister that removes the last library
//! shuts the runtime down (see `lifecycle`).

use crate::boundary::guard;
use crate::export::export_c;
use crate::session::lifecycle::{register_library, unregister_library, with_session};
use omptarget_abi::BinDesc;

extern "C-unwind" fn __tgt_register_requires(flags: i64) {
    guard("__tgt_register_requires", (), || {
        with_session(|s| s.register_requires(flags));
    })
}

/// # Safety
/// `desc` points to a descriptor that stays valid until the matching
/// `__tgt_unregister_lib` (clang's descriptors are static data).
unsafe extern "C-unwind" fn __tgt_register_lib(desc: *mut BinDesc) {
    guard("__tgt_register_lib", (), || {
        if desc.is_null() {
            eprintln!("Libomptarget error: __tgt_register_lib called with a null descriptor");
            return;
        }
        // SAFETY: `desc` is non-null (checked above) and stays valid until
        // the matching `__tgt_unregister_lib` (our caller's contract).
        register_library(|s| unsafe { s.register_lib(desc) });
    })
}

/// # Safety
/// `desc` is null or a descriptor passed to `__tgt_register_lib` before,
/// still valid.
unsafe extern "C-unwind" fn __tgt_unregister_lib(desc: *mut BinDesc) {
    guard("__tgt_unregister_lib", (), || {
        if desc.is_null() {
            eprintln!("Libomptarget error: __tgt_unregister_lib called with a null descriptor");
            return;
        }
        // SAFETY: `desc` is the descriptor `register_lib` got, still valid
        // (our caller's contract).
        unregister_library(desc as *const std::ffi::c_void, |s| unsafe {
            s.unregister_lib(desc)
        });
        // The library's addresses may be reused by the next one loaded.
        crate::caller::forget_objects();
    })
}

extern "C-unwind" fn __tgt_init_all_rtls() {
    guard("__tgt_init_all_rtls", (), || {
        with_session(|s| s.init_all_rtls());
    })
}

export_c!(
    __tgt_register_requires,
    __tgt_register_lib,
    __tgt_unregister_lib,
    __tgt_init_all_rtls
);
