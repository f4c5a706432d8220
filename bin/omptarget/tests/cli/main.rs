//! The `omptarget` command on real clang-14 programs (the C programs of
//! `ffi/program/shim/tests/c`), with the libraries `cargo xtask stage` puts in
//! `target/omptarget/lib`, which the binary finds from its own location.
//!
//! One test binary, a module per topic; the helpers every topic uses are
//! here.

#![allow(unused_imports)] // each topic uses part of the shared imports

mod info;
mod mpi;
mod run;
mod signals;

pub(crate) use signals::{children_of, process, still_running, wait_for_file};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) const OMPTARGET: &str = env!("CARGO_BIN_EXE_omptarget");

pub(crate) fn repo() -> PathBuf {
    // bin/omptarget -> the repository's root.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn c_source(name: &str) -> PathBuf {
    repo().join("ffi/program/shim/tests/c").join(name)
}

/// The staged host plugin (`cargo xtask stage` made it).
pub(crate) fn staged_host_plugin() -> PathBuf {
    let exe = Path::new(OMPTARGET).canonicalize().unwrap();
    let lib = exe.parent().unwrap().join("../omptarget/lib");
    let plugin = lib.join("libomptarget.rtl.x86_64.so");
    assert!(
        plugin.is_file(),
        "run `cargo xtask stage` first: {} is missing",
        plugin.display()
    );
    plugin
}

/// `omptarget ARGS` in `dir`, without inherited offload settings.
pub(crate) fn omptarget(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(OMPTARGET);
    cmd.current_dir(dir).args(args);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("LIBOMPTARGET_")
            || key.starts_with("OMPTARGET_")
            || key.starts_with("OMP_")
        {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("running omptarget")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Compile a C program of `ffi/program/shim/tests/c` with clang-14 for x86_64 offload.
pub(crate) fn clang14(dir: &Path, source: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(source.trim_end_matches(".c"));
    let status = Command::new("clang-14")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1"])
        .args(extra)
        .arg(c_source(source))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-14 (cargo xtask deps installs it)");
    assert!(status.success());
    out
}

pub(crate) fn line_of(source: &str, marker: &str) -> usize {
    std::fs::read_to_string(c_source(source))
        .unwrap()
        .lines()
        .position(|l| l.contains(marker))
        .unwrap()
        + 1
}
