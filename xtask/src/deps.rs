//! `cargo xtask deps`: install the Debian 12 packages the build and the
//! tests need. Idempotent: when everything is installed it only asks dpkg.

use crate::cmd;
use anyhow::{bail, Context, Result};
use std::process::Command;

/// (package, why it is needed). README.md lists the same set.
pub const PACKAGES: &[(&str, &str)] = &[
    (
        "build-essential",
        "cc/c++ as the Rust linker, make, libc headers",
    ),
    ("pkg-config", "locating system libraries for -sys crates"),
    (
        "libffi-dev",
        "the host plugin calls kernels through libffi (system library)",
    ),
    (
        "clang-14",
        "compiles the OpenMP offload test programs (LLVM 14 ABI)",
    ),
    (
        "clang-tools-14",
        "clang-offload-wrapper/-bundler used by clang 14's offload link",
    ),
    (
        "libomp-14-dev",
        "LLVM 14's libomp, libomptarget and plugins: reference runtime",
    ),
    ("valgrind", "leak checks of the runtime and plugins"),
    (
        "clang-19",
        "ABI tests: newest 32-byte-entry compiler, kernel args v3",
    ),
    (
        "clang-tools-19",
        "clang-linker-wrapper/-offload-packager for clang 19 links",
    ),
    ("clang-22", "ABI tests: 56-byte offload entries (LLVM 20+)"),
    (
        "clang-tools-22",
        "clang-linker-wrapper/-offload-packager for clang 22 links",
    ),
];

/// Packages from [`PACKAGES`] that dpkg does not report as installed.
pub fn missing() -> Result<Vec<&'static str>> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Abbrev}\\n"])
        .args(PACKAGES.iter().map(|(p, _)| *p))
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
    Ok(PACKAGES
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
    let todo = missing()?;
    if todo.is_empty() {
        println!(
            "deps: all {} packages installed ({})",
            PACKAGES.len(),
            PACKAGES
                .iter()
                .map(|(p, _)| *p)
                .collect::<Vec<_>>()
                .join(" ")
        );
        return Ok(());
    }
    println!("deps: installing {}", todo.join(" "));
    for (p, why) in PACKAGES.iter().filter(|(p, _)| todo.contains(p)) {
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
