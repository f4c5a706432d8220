// Shared by the build scripts of the shim and of the host and CUDA plugins
// (`include!`d, so it has no crate of its own).
//
// Release builds lay the library's code out in the order `text-order.txt`
// gives: every function a typical program runs (start-up, registration, a
// region, the data paths, shutdown) first, together, and the code that
// only error, report and debug paths run after it.
//
// Why: the kernel maps a library's code in 64 KiB windows around each page
// a program touches (fault-around), so code spread over the whole text
// makes nearly all of it resident. Measured on `one_region`
// (BENCHMARKS.md, "Changes measured here"): the shim's resident code went
// from 1,040 KiB to 400 KiB, the host plugin's from 224 KiB to 132 KiB.
//
// The ordering flag is LLD's, so the link names LLD (the toolchain's
// `rust-lld`, through its `gcc-ld` folder): rustc 1.90 and later already
// link with it on x86_64 Linux, older ones would otherwise pass the flag to
// the system linker, which does not know it. Debug builds link with LLD
// too (the tested libraries are linked as the shipped ones are) but are not
// ordered: their names never match.
//
// The file lists mangled names, which carry a hash that changes with the
// toolchain, the dependency versions, and some code changes: LLD skips the
// names it does not find (`--no-warn-symbol-ordering` keeps that quiet in
// every build), the library is as correct as before, only its layout
// degrades to the linker's own. `scripts/text-order.py --check` says how
// many names still match (non-zero exit below 90%); without `--check` it
// rewrites the files from callgrind runs.
//
// Without the toolchain's LLD (a distribution's rustc), or with
// `OMPTARGET_NO_TEXT_ORDER` set, nothing is added: the default linker and
// layout.

fn link_in_text_order() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let order = std::path::Path::new(&manifest_dir).join("text-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=OMPTARGET_NO_TEXT_ORDER");
    if std::env::var_os("OMPTARGET_NO_TEXT_ORDER").is_some() {
        return;
    }
    let Some(gcc_ld) = toolchain_lld_dir() else {
        return;
    };
    println!("cargo:rustc-cdylib-link-arg=-B{}", gcc_ld.display());
    println!("cargo:rustc-cdylib-link-arg=-fuse-ld=lld");
    if std::env::var("PROFILE").as_deref() == Ok("release") && order.is_file() {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-cdylib-link-arg=-Wl,--no-warn-symbol-ordering");
    }
}

/// The toolchain's `gcc-ld` folder (an `ld.lld` that runs `rust-lld`), if
/// this rustc ships one for the host.
fn toolchain_lld_dir() -> Option<std::path::PathBuf> {
    let rustc = std::env::var_os("RUSTC")?;
    let out = std::process::Command::new(rustc)
        .arg("--print")
        .arg("sysroot")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let host = std::env::var("HOST").ok()?;
    let dir = std::path::Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/gcc-ld");
    dir.join("ld.lld").is_file().then_some(dir)
}
