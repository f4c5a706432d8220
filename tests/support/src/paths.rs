//! Where things are: the workspace, cargo's target directory, the C
//! sources of the tests, the reference runtime.
//!
//! One rule for the target directory: it is found from the running test
//! executable (the first of [`std::env::current_exe`]'s ancestors holding
//! `CACHEDIR.TAG`, which cargo writes at the target directory's root), not
//! from `CARGO_TARGET_DIR`: cargo resolves a relative `CARGO_TARGET_DIR`
//! against the directory it was invoked from, which a test cannot know.
//! (`xtask`'s `stage::target_dir` reads `CARGO_TARGET_DIR` instead, making a
//! relative one absolute against its current directory as cargo does: it
//! runs where cargo was invoked.)

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The workspace root (the directory holding `Cargo.lock`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .expect("the workspace root holds Cargo.lock")
        .to_path_buf()
}

/// Cargo's target directory: the first ancestor of the running executable
/// that holds `CACHEDIR.TAG` (see the module docs).
pub fn target_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the running executable's path");
        exe.ancestors()
            .skip(1)
            .find(|dir| dir.join("CACHEDIR.TAG").is_file())
            .unwrap_or_else(|| {
                panic!(
                    "no ancestor of {} holds CACHEDIR.TAG: not run from cargo's target \
                     directory?",
                    exe.display()
                )
            })
            .to_path_buf()
    })
    .clone()
}

/// `<target>/tmp` (what cargo passes integration tests as
/// `CARGO_TARGET_TMPDIR`), created if missing.
pub fn tmp_dir() -> PathBuf {
    let dir = target_dir().join("tmp");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `<target>/omptarget`: staged libraries, C builds, the LLVM releases.
pub fn omptarget_dir() -> PathBuf {
    target_dir().join("omptarget")
}

/// `tests/c`: the C suites' programs, one concept each; `tests/c/lib`
/// holds sources that are not programs themselves (libraries some
/// programs build).
pub fn programs_dir() -> PathBuf {
    workspace_root().join("tests").join("c")
}

/// `tests/kernels`: kernels for the Rust API tests and the examples.
pub fn kernels_dir() -> PathBuf {
    workspace_root().join("tests").join("kernels")
}

/// `ffi/program/shim/tests/c/<name>`: a C source of the shim's tests (that exists).
pub fn shim_c_source(name: &str) -> PathBuf {
    let path = workspace_root().join("ffi/program/shim/tests/c").join(name);
    assert!(path.is_file(), "missing C source {}", path.display());
    path
}
