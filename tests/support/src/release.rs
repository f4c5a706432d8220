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

    /// This release's row of `tests/releases.tsv`.
    fn row(self) -> Row {
        Row::of(self.major())
    }

    /// The reference runtime's library directory (also holds its libomp).
    pub fn reference_lib_dir(self) -> PathBuf {
        // An absolute folder of the table replaces the base (`Path::join`).
        paths::omptarget_dir().join(self.row().lib_dir)
    }

    /// The file name of the release's libomptarget, as its clang links it.
    pub fn soname(self) -> &'static str {
        self.row().soname
    }

    /// The files a reference run needs, to say what is missing: LLVM 14's
    /// runtime also dlopens its host plugin.
    pub fn reference_files(self) -> Vec<PathBuf> {
        let dir = self.reference_lib_dir();
        let mut files = vec![
            dir.join(self.soname()),
            dir.join("libomp.so.5"),
            self.include_dir().join("omp.h"),
        ];
        if self == Release::Llvm14 {
            files.push(dir.join("libomptarget.rtl.x86_64.so"));
        }
        files
    }

    /// Where this release's `omp.h` is (clang 19/22: unpacked, since their
    /// libomp-dev packages are not installed).
    pub fn include_dir(self) -> PathBuf {
        self.reference_lib_dir().join(self.row().include_dir)
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

/// A row of `tests/releases.tsv`, the one table of the releases' paths
/// (the lit and benchmark scripts read it too).
struct Row {
    lib_dir: &'static str,
    soname: &'static str,
    include_dir: &'static str,
}

impl Row {
    const TABLE: &'static str = include_str!("../../releases.tsv");

    fn of(major: u32) -> Row {
        Self::TABLE
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| line.split('\t').collect::<Vec<_>>())
            .find(|fields| fields.first() == Some(&major.to_string().as_str()))
            .map(|fields| match fields[..] {
                [_, lib_dir, soname, include_dir, _lit_suite] => Row {
                    lib_dir,
                    soname,
                    include_dir,
                },
                _ => panic!("tests/releases.tsv: LLVM {major}'s row has not 5 fields"),
            })
            .unwrap_or_else(|| panic!("tests/releases.tsv has no row for LLVM {major}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_a_row() {
        for release in Release::ALL {
            let row = release.row();
            assert!(row.soname.starts_with("libomptarget.so"));
        }
        assert_eq!(
            Release::Llvm14.reference_lib_dir(),
            PathBuf::from("/usr/lib/llvm-14/lib")
        );
        assert_eq!(
            Release::Llvm22.reference_lib_dir(),
            Release::unpacked_root().join("usr/lib/llvm-22/lib")
        );
        assert_eq!(Release::Llvm19.soname(), "libomptarget.so.19.1");
    }
}
