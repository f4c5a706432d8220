//! Link the shim as LLVM 14's `libomptarget.so`: its SONAME and the version
//! node `VERS1.0` on every exported symbol (see src/export.rs for how the
//! symbols escape rustc's own version script); its code laid out hot first
//! (../link/text_order.rs).
include!("../../shared/link/text_order.rs");

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libomptarget.so");
    println!("cargo:rerun-if-changed=exports.map");
    link_in_text_order();
}
