//! Where things are: the workspace, the C programs, build outputs, and the
//! two runtimes (LLVM 14's reference and ours).

use std::path::{Path, PathBuf};

/// The LLVM 14 runtime the programs are compared against (also their RUNPATH).
pub const REFERENCE_LIB_DIR: &str = "/usr/lib/llvm-14/lib";

/// The workspace root (the root package's manifest directory).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/c`: the programs, one concept each; `tests/c/lib` holds sources
/// that are not programs themselves (libraries some programs build).
pub fn programs_dir() -> PathBuf {
    workspace_root().join("tests").join("c")
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                workspace_root().join(p)
            }
        })
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// `target/omptarget/c-tests`: one sub-directory per program.
pub fn build_root() -> PathBuf {
    target_dir().join("omptarget").join("c-tests")
}

/// `target/omptarget/lib`: where `xtask stage` puts our libomptarget.so.
pub fn our_lib_dir() -> PathBuf {
    target_dir().join("omptarget").join("lib")
}

/// The reference runtime's library directory as a path.
pub fn reference_lib_dir() -> &'static Path {
    Path::new(REFERENCE_LIB_DIR)
}
