//! LLVM 22's liboffload API (`ol*`) served by our library: a C program
//! built against the release's `OffloadAPI.h` and linked against its
//! `libLLVMOffload.so` (as a user builds one), run with the staged folder
//! first on `LD_LIBRARY_PATH`, where `libLLVMOffload.so.22.1` is ours.
//! The program (`tests/c/offload_api.c`) checks each answer itself and
//! prints what it found; it loads host kernels (`tests/c/offload_kernels.c`,
//! an x86_64 shared object) on a host device and launches them.

use omptarget_test_support::release::Release;
use omptarget_test_support::{clang::clang, valgrind, Outcome, Run, Scratch};
use std::path::{Path, PathBuf};

/// Build `offload_api.c` against LLVM 22's liboffload, and the host
/// kernel objects it loads (`offload_kernels.c`,
/// `offload_kernel_undefined.c`, which calls an undefined function, and
/// the C++ `offload_kernels_cxx.cpp`): the
/// program and the objects; `None` (and a note) where the release is not
/// unpacked outside CI.
fn build(scratch: &Scratch) -> Option<(PathBuf, [PathBuf; 3])> {
    let lib = Release::Llvm22.reference_lib_dir();
    let include = lib.join("../include");
    if !include.join("offload/OffloadAPI.h").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "LLVM 22's OffloadAPI.h is missing under {} (run `cargo xtask deps`)",
            include.display()
        );
        eprintln!("skipping: LLVM 22's liboffload is not unpacked (cargo xtask deps)");
        return None;
    }
    let program = scratch.join("offload_api");
    let include_flag = format!("-I{}", include.display());
    let lib_flag = format!("-L{}", lib.display());
    clang(
        &["offload_api.c"],
        &program,
        &[&include_flag],
        &[&lib_flag, "-lLLVMOffload", "-ldl"],
    );
    let kernels = scratch.join("offload_kernels.so");
    clang(&["offload_kernels.c"], &kernels, &["-shared", "-fPIC"], &[]);
    let undefined = scratch.join("offload_kernel_undefined.so");
    clang(
        &["offload_kernel_undefined.c"],
        &undefined,
        &["-shared", "-fPIC"],
        &[],
    );
    let cxx = scratch.join("offload_kernels_cxx.so");
    clang(
        &["offload_kernels_cxx.cpp"],
        &cxx,
        &["-shared", "-fPIC"],
        &["-lstdc++"],
    );
    Some((program, [kernels, undefined, cxx]))
}

/// The program ran on our library, not LLVM's: the dynamic loader's
/// trace names the staged (or valgrind's) folder for `libLLVMOffload`.
fn assert_loaded_ours(out: &Outcome, dir: &Path) {
    let ours = format!("{}/libLLVMOffload.so.22.1", dir.display());
    assert!(
        out.stderr.contains(&ours),
        "libLLVMOffload.so.22.1 was not loaded from {}:\n{out}",
        dir.display()
    );
}

#[test]
fn a_liboffload_program_runs_on_our_runtime() {
    let scratch = Scratch::new("offload-api");
    let Some((program, kernels)) = build(&scratch) else {
        return;
    };
    let staged = omptarget_test_support::staged().lib_dir.clone();
    let out = Run::new(&scratch, &program)
        .arg(&kernels[0])
        .arg(&kernels[1])
        .arg(&kernels[2])
        .env("LD_DEBUG", "libs")
        .run();
    out.assert_success();
    assert_loaded_ours(&out, &staged);
    assert_eq!(out.value("failures"), "0", "{out}");
    // The built-in host plugin's devices and the initial device.
    let devices: usize = out.value("devices").parse().unwrap();
    assert!(devices >= 2, "{out}");
    // OL_DEVICE_TYPE_CPU, the x86_64 plugin's platform, backend UNKNOWN
    // (LLVM 22 has no CPU backend; HOST is the initial device's).
    assert_eq!(out.value("device_type"), "3", "{out}");
    assert_eq!(out.value("platform_name"), "x86_64", "{out}");
    assert_eq!(out.value("platform_backend"), "0", "{out}");
    assert!(!out.value("device_name").is_empty(), "{out}");
    // The host kernel ran twice (queued and not), on the device's memory.
    assert_eq!(out.value("kernel_runs"), "2", "{out}");
    // A C++ kernel object: its static constructor ran at load.
    assert_eq!(out.value("cxx_kernel"), "81", "{out}");
}

#[test]
fn a_liboffload_program_is_clean_under_valgrind() {
    let scratch = Scratch::new("offload-api-valgrind");
    let Some((program, kernels)) = build(&scratch) else {
        return;
    };
    let libs = valgrind::our_lib_dir()
        .unwrap_or_else(|e| panic!("no runtime to check under valgrind: {e}"));
    let out = Run::new(&scratch, Path::new("valgrind"))
        .env("LD_LIBRARY_PATH", &libs)
        .env("LD_DEBUG", "libs")
        .arg("--leak-check=full")
        .arg("--show-leak-kinds=definite,indirect")
        .arg("--errors-for-leak-kinds=definite,indirect")
        .arg("--error-exitcode=99")
        .arg(format!(
            "--suppressions={}",
            valgrind::suppressions().display()
        ))
        .arg(&program)
        .arg(&kernels[0])
        .arg(&kernels[1])
        .arg(&kernels[2])
        .run();
    out.assert_success();
    assert_loaded_ours(&out, &libs);
    assert_eq!(out.value("failures"), "0", "{out}");
    assert_eq!(out.value("kernel_runs"), "2", "{out}");
    assert!(
        out.stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors:\n{out}"
    );
    assert!(
        out.stderr.contains("definitely lost: 0 bytes")
            || out.stderr.contains("no leaks are possible"),
        "valgrind found lost blocks:\n{out}"
    );
}
