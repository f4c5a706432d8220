//! The LLVM releases the suite builds every program with, and where each
//! one's compilers and reference runtime are.
//!
//! clang 14's reference is the system's LLVM 14 (libomp-14-dev). LLVM 19's
//! and 22's runtimes conflict with it, so `cargo xtask deps` unpacks them
//! (`.ci/llvm-releases.sh`) into `target/omptarget/llvm-releases/root`;
//! their `omp.h` and link-time libraries come from there too.

use crate::paths;
use std::path::PathBuf;

/// One LLVM release: its compilers and its own runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// clang-14 against LLVM 14's runtime (`/usr/lib/llvm-14/lib`).
    Llvm14,
    /// clang-19 against LLVM 19's runtime (unpacked).
    Llvm19,
    /// clang-22 against LLVM 22's runtime (unpacked).
    Llvm22,
}

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 3] = [Release::Llvm14, Release::Llvm19, Release::Llvm22];

    /// The major version: 14, 19 or 22.
    pub fn major(self) -> u32 {
        match self {
            Release::Llvm14 => 14,
            Release::Llvm19 => 19,
            Release::Llvm22 => 22,
        }
    }

    /// `target/omptarget/llvm-releases/root`: where the 19/22 runtimes are.
    pub fn unpacked_root() -> PathBuf {
        paths::omptarget_dir().join("llvm-releases").join("root")
    }

    /// The reference runtime's library directory (also holds its libomp).
    pub fn reference_lib_dir(self) -> PathBuf {
        match self {
            Release::Llvm14 => PathBuf::from(paths::REFERENCE_LIB_DIR),
            other => Self::unpacked_root().join(format!("usr/lib/llvm-{}/lib", other.major())),
        }
    }

    /// The files a reference run needs, to say what is missing.
    pub fn reference_files(self) -> Vec<PathBuf> {
        let dir = self.reference_lib_dir();
        match self {
            Release::Llvm14 => [
                "libomptarget.so",
                "libomptarget.rtl.x86_64.so",
                "libomp.so.5",
            ]
            .iter()
            .map(|f| dir.join(f))
            .collect(),
            other => vec![
                dir.join(format!("libomptarget.so.{}.1", other.major())),
                dir.join("libomp.so.5"),
                self.include_dir().join("omp.h"),
            ],
        }
    }

    /// Where this release's `omp.h` is (clang 19/22: unpacked, since their
    /// libomp-dev packages are not installed).
    pub fn include_dir(self) -> PathBuf {
        match self {
            Release::Llvm14 => PathBuf::from("/usr/lib/llvm-14/lib/clang/14.0.6/include"),
            other => self
                .reference_lib_dir()
                .join(format!("clang/{}/include", other.major())),
        }
    }

    /// Flags every compile and link of this release needs besides
    /// `-fopenmp -fopenmp-targets=...`: for 19/22, `omp.h` and the link-time
    /// `libomp.so` / `libomptarget.so` from the unpacked runtime.
    pub fn extra_flags(self) -> Vec<String> {
        match self {
            Release::Llvm14 => Vec::new(),
            _ => vec![
                format!("-I{}", self.include_dir().display()),
                format!("-L{}", self.reference_lib_dir().display()),
            ],
        }
    }

    /// `LD_LIBRARY_PATH` for a run on our runtime: our libraries first, then
    /// this release's own (for its `libomp.so.5`; clang-14 binaries find
    /// LLVM 14's through their RUNPATH).
    pub fn our_library_path(self, ours: &std::path::Path) -> String {
        match self {
            Release::Llvm14 => ours.display().to_string(),
            _ => format!("{}:{}", ours.display(), self.reference_lib_dir().display()),
        }
    }

    /// `c-tests` for clang 14 (as before), `c-tests-19`, `c-tests-22`.
    pub fn build_dir_name(self) -> String {
        match self {
            Release::Llvm14 => "c-tests".into(),
            other => format!("c-tests-{}", other.major()),
        }
    }

    /// The newer of two releases.
    pub fn max_by_major(self, other: Release) -> Release {
        if other.major() > self.major() {
            other
        } else {
            self
        }
    }

    /// Parse `14`, `19` or `22`.
    pub fn parse(text: &str) -> Option<Release> {
        Release::ALL
            .into_iter()
            .find(|r| r.major().to_string() == text)
    }
}
