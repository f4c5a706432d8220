//! How the shim's C entry points get the symbol version `VERS1.0`.
//!
//! clang-14 binaries import `__tgt_register_lib@VERS1.0` and friends, so
//! every export must carry that version node. rustc links a cdylib with its
//! own version script that lists each `#[no_mangle]` symbol as unversioned
//! global, and for a name listed in two scripts the first one wins, so
//! `#[no_mangle]` exports can never be versioned. Instead each entry point is
//! an ordinary (mangled, local) `extern "C" fn`, and [`export_c!`] defines a
//! global alias symbol with the C name in assembly. rustc's script does not
//! list the alias, so ours (`exports.map`) assigns it to `VERS1.0`.

/// Export `extern "C"` functions of the current module under their own names
/// with the symbol version `VERS1.0`. Each name must also be listed in
/// `exports.map` (a test checks both lists against LLVM 14's library).
macro_rules! export_c {
    ($($name:ident),+ $(,)?) => {
        $(
            ::std::arch::global_asm!(
                concat!(".globl ", stringify!($name)),
                concat!(".type ", stringify!($name), ",@function"),
                concat!(".set ", stringify!($name), ", {f}"),
                f = sym $name,
            );
        )+
    };
}
pub(crate) use export_c;
