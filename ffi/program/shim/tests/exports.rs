//! The shim exports what LLVM 14's libomptarget.so exports plus the entries
//! clang 19 and 22 binaries and their OpenMP API call ([`LLVM_19_22`], each
//! exported by LLVM 19's or 22's own library), each symbol with the version
//! node `VERS1.0`, and nothing else of ours.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

const LLVM14: &str = "/usr/lib/llvm-14/lib/libomptarget.so";

/// What we export beyond LLVM 14's list: entries of LLVM 19 and 22.
const LLVM_19_22: &[&str] = &[
    "__tgt_rtl_deinit",
    "__tgt_rtl_init",
    "__tgt_target_kernel",
    "__tgt_target_kernel_nowait",
    "__tgt_target_nowait_query",
    "llvm_omp_target_dynamic_shared_alloc",
    "llvm_omp_target_free_device",
    "llvm_omp_target_free_host",
    "llvm_omp_target_free_shared",
    "llvm_omp_target_lock_mem",
    "llvm_omp_target_unlock_mem",
    "omp_get_device_num",
    "omp_get_mapped_ptr",
    "omp_get_device_from_uid",
    "omp_get_uid_from_device",
    "omp_target_is_accessible",
    "omp_target_memcpy_async",
    "omp_target_memcpy_rect_async",
    "omp_target_memset",
    "omp_target_memset_async",
];

/// LLVM 19's and 22's libraries, as `cargo xtask deps` unpacks them.
fn newer_llvm_libraries() -> Vec<PathBuf> {
    let root = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target"))
        .join("omptarget/llvm-releases/root/usr/lib");
    vec![
        root.join("llvm-19/lib/libomptarget.so.19.1"),
        root.join("llvm-22/lib/libomptarget.so.22.1"),
    ]
}

fn built_shim() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target"));
    let lib = target.join("debug/libomptarget_shim.so");
    if !lib.exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "-q", "-p", "omptarget-shim"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the shim failed");
    }
    lib
}

/// `name@@VERSION` of every symbol the library defines in its dynamic table.
fn defined_dynamic_symbols(lib: &std::path::Path) -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .expect("run nm (binutils)");
    assert!(out.status.success(), "nm failed on {}", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_owned))
        // The version definition itself shows up as an absolute symbol.
        .filter(|name| name != "VERS1.0")
        .collect()
}

#[test]
fn every_export_is_llvm14s_with_version_vers1_0() {
    let ours = defined_dynamic_symbols(&built_shim());
    for sym in &ours {
        assert!(
            sym.ends_with("@@VERS1.0"),
            "{sym} is exported without the VERS1.0 version node"
        );
    }
    let map: BTreeSet<String> = include_str!("../exports.map")
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with('}') && !l.contains('*') && !l.contains(':'))
        .map(|l| format!("{}@@VERS1.0", l.trim_end_matches(';')))
        .collect();
    assert_eq!(ours, map, "the built library and exports.map disagree");
    // liboffload's entries are compared with LLVM 22's library below.
    let ours: BTreeSet<String> = ours.into_iter().filter(|s| !is_liboffload(s)).collect();
    if std::path::Path::new(LLVM14).exists() {
        let mut expected = defined_dynamic_symbols(std::path::Path::new(LLVM14));
        expected.extend(LLVM_19_22.iter().map(|s| format!("{s}@@VERS1.0")));
        assert_eq!(
            ours, expected,
            "our exports differ from LLVM 14's libomptarget.so plus LLVM_19_22"
        );
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{LLVM14} is missing (install libomp-14-dev)"
        );
        eprintln!("skipping the comparison with LLVM 14: {LLVM14} is not installed");
    }
}

#[test]
fn each_addition_is_an_export_of_llvm_19_or_22() {
    let libraries = newer_llvm_libraries();
    if libraries.iter().any(|l| !l.exists()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "LLVM 19/22 runtimes missing (run `cargo xtask deps`)"
        );
        eprintln!("skipping: LLVM 19/22 runtimes are not unpacked (cargo xtask deps)");
        return;
    }
    let theirs: BTreeSet<String> = libraries
        .iter()
        .flat_map(|l| defined_dynamic_symbols(l))
        .collect();
    for name in LLVM_19_22 {
        assert!(
            theirs.contains(&format!("{name}@@VERS1.0")),
            "{name} is exported by neither LLVM 19's nor LLVM 22's libomptarget"
        );
    }
}

/// An `ol*` entry of liboffload's API (`offload_api` in the shim).
fn is_liboffload(symbol: &str) -> bool {
    symbol.starts_with("ol") && symbol.as_bytes().get(2).is_some_and(u8::is_ascii_uppercase)
}

/// The shim exports exactly the `ol*` entries of LLVM 22's
/// `libLLVMOffload.so.22.1` (each with its `...WithCodeLoc` form), with
/// the same version node, so that a program linked against LLVM's
/// library finds every symbol it may import here.
#[test]
fn ol_exports_are_liboffload_22s() {
    let theirs = newer_llvm_libraries()[1].with_file_name("libLLVMOffload.so.22.1");
    if !theirs.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing (run `cargo xtask deps`)",
            theirs.display()
        );
        eprintln!(
            "skipping: {} is not unpacked (cargo xtask deps)",
            theirs.display()
        );
        return;
    }
    let ours: BTreeSet<String> = defined_dynamic_symbols(&built_shim())
        .into_iter()
        .filter(|s| is_liboffload(s))
        .collect();
    let theirs: BTreeSet<String> = defined_dynamic_symbols(&theirs)
        .into_iter()
        .filter(|s| is_liboffload(s))
        .collect();
    assert!(
        theirs.len() >= 70,
        "LLVM 22's liboffload exports {} ol* symbols",
        theirs.len()
    );
    assert_eq!(
        ours, theirs,
        "our ol* exports differ from LLVM 22's libLLVMOffload.so.22.1"
    );
}

#[test]
fn soname_is_libomptarget_so() {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(built_shim())
        .output()
        .expect("run readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Library soname: [libomptarget.so]"), "{text}");
}
