//! `cargo xtask deps`: install the Debian 12 packages the build and the
//! tests need. Idempotent: when everything is installed it only asks dpkg.

use crate::cmd;
use anyhow::{bail, Context, Result};
use std::process::Command;

/// `.ci/apt-packages.txt`: one package per line with `# why`; .ci/run
/// installs the same list before any Rust code can build.
const PACKAGE_LIST: &str = include_str!("../../.ci/apt-packages.txt");

/// (package, why it is needed), from [`PACKAGE_LIST`].
pub fn packages() -> Vec<(&'static str, &'static str)> {
    PACKAGE_LIST
        .lines()
        .filter_map(|l| {
            let (name, why) = l.split_once('#').unwrap_or((l, ""));
            let name = name.trim();
            (!name.is_empty()).then_some((name, why.trim()))
        })
        .collect()
}

/// Packages from [`packages`] that dpkg does not report as installed.
pub fn missing() -> Result<Vec<&'static str>> {
    let packages = packages();
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Abbrev}\\n"])
        .args(packages.iter().map(|(p, _)| *p))
        .output()
        .context("running dpkg-query (is this Debian?)")?;
    // dpkg-query exits 1 when some package is unknown; stdout still lists
    // the known ones.
    let listing = String::from_utf8_lossy(&out.stdout);
    let installed: Vec<&str> = listing
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let name = parts.next()?;
            let status = parts.next()?;
            status.starts_with("ii").then_some(name)
        })
        .collect();
    Ok(packages
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !installed.contains(p))
        .collect())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `apt-get`, through sudo unless we are root.
fn apt_get() -> Command {
    let mut cmd = if is_root() {
        Command::new("apt-get")
    } else {
        let mut c = Command::new("sudo");
        c.arg("apt-get");
        c
    };
    cmd.env("DEBIAN_FRONTEND", "noninteractive");
    cmd
}

pub fn deps() -> Result<()> {
    install_packages()?;
    install_nextest()?;
    llvm_releases()?;
    llvm_sources()
}

/// LLVM 14's, 19's and 22's own lit suites (`offload/test`), unpacked from
/// Debian's source packages into `target/omptarget/llvm-sources` by
/// `.ci/llvm-sources.sh`: `cargo xtask test` runs them on each release's
/// runtime and on ours (`scripts/llvm-lit.py`).
fn llvm_sources() -> Result<()> {
    let root = crate::stage::workspace_root();
    let dest = llvm_releases_dir().with_file_name("llvm-sources");
    cmd::run(
        Command::new("bash")
            .arg(root.join(".ci/llvm-sources.sh"))
            .arg(&dest),
    )
}

/// cargo-nextest, which `cargo xtask test` runs the workspace's tests
/// with (one process per test, spread over the cores, hang limits in
/// `.config/nextest.toml`). The Rust machines this project runs on ship
/// it; elsewhere it is built from crates.io (a few minutes, once).
fn install_nextest() -> Result<()> {
    if crate::test::nextest_installed() {
        println!("deps: cargo-nextest installed");
        return Ok(());
    }
    println!("deps: installing cargo-nextest from crates.io");
    cmd::run(cmd::cargo().args(["install", "cargo-nextest", "--locked"]))
}

/// LLVM 19's and 22's OpenMP runtimes, unpacked (not installed: they
/// conflict with libomp-14-dev) into `target/omptarget/llvm-releases` by
/// `.ci/llvm-releases.sh`: the references of the clang-19/22 differential
/// runs.
fn llvm_releases() -> Result<()> {
    let root = crate::stage::workspace_root();
    let dest = llvm_releases_dir();
    cmd::run(
        Command::new("bash")
            .arg(root.join(".ci/llvm-releases.sh"))
            .arg(&dest),
    )
}

/// `target/omptarget/llvm-releases`: where LLVM 19's and 22's runtimes
/// are unpacked (under `root/`).
pub fn llvm_releases_dir() -> std::path::PathBuf {
    let root = crate::stage::workspace_root();
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("omptarget/llvm-releases")
}

/// LLVM `major`'s unpacked library directory (its libomptarget, libomp,
/// and `clang/N/include/omp.h`).
pub fn llvm_release_lib_dir(major: u32) -> std::path::PathBuf {
    llvm_releases_dir().join(format!("root/usr/lib/llvm-{major}/lib"))
}

fn install_packages() -> Result<()> {
    let packages = packages();
    let todo = missing()?;
    if todo.is_empty() {
        println!(
            "deps: all {} packages installed ({})",
            packages.len(),
            packages
                .iter()
                .map(|(p, _)| *p)
                .collect::<Vec<_>>()
                .join(" ")
        );
        return Ok(());
    }
    println!("deps: installing {}", todo.join(" "));
    for (p, why) in packages.iter().filter(|(p, _)| todo.contains(p)) {
        println!("  {p}: {why}");
    }
    cmd::run(apt_get().args(["update", "-q"]))?;
    cmd::run(
        apt_get()
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&todo),
    )?;
    let still = missing()?;
    if !still.is_empty() {
        bail!("apt-get finished but {} still missing", still.join(" "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn package_list_parses_with_reasons() {
        let p = super::packages();
        assert!(p.iter().any(|(n, _)| *n == "libomp-14-dev"));
        assert!(p.iter().all(|(n, why)| !n.contains(' ') && !why.is_empty()));
    }
}
