//! Build the cdylibs and copy them into the fixed output folders.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the staged libraries are.
pub struct Staged {
    /// `target/omptarget/lib`: the shim and the shipped plugins.
    pub lib_dir: PathBuf,
    /// `target/omptarget/test-plugins`: plugins that exist for tests only.
    pub test_plugin_dir: PathBuf,
}

/// (cargo package, file cargo builds, staged name, shipped?): libraries
/// staged in [`LIB_DIR`] when shipped, else in [`TEST_PLUGIN_DIR`].
pub const ARTIFACTS: &[(&str, &str, &str, bool)] = &[
    (
        "omptarget-plugin-host-rtl",
        "libomptarget_rtl_x86_64.so",
        "libomptarget.rtl.x86_64.so",
        true,
    ),
    (
        "omptarget-plugin-cuda-rtl",
        "libomptarget_rtl_cuda.so",
        "libomptarget.rtl.cuda.so",
        true,
    ),
    (
        "omptarget-plugin-mpi-rtl",
        "libomptarget_rtl_mpi.so",
        "libomptarget.rtl.mpi.so",
        true,
    ),
    (
        SHIM_PACKAGE,
        "libomptarget_shim.so",
        "libomptarget.so",
        true,
    ),
    (
        "omptarget-plugin-test",
        "libomptarget_rtl_test.so",
        "libomptarget.rtl.test.so",
        false,
    ),
    (
        "omptarget-plugin-incomplete",
        "libomptarget_rtl_incomplete.so",
        "libomptarget.rtl.incomplete.so",
        false,
    ),
];

/// (cargo package, executable): programs staged in [`BIN_DIR`].
pub const BINARIES: &[(&str, &str)] = &[("omptarget-mpi-device", "omptarget-mpi-device")];

/// `target/omptarget/<this>`: what a program loads (`LD_LIBRARY_PATH`).
pub const LIB_DIR: &str = "lib";
/// `target/omptarget/<this>`: plugins that exist for tests only.
pub const TEST_PLUGIN_DIR: &str = "test-plugins";
/// `target/omptarget/<this>`: the staged programs ([`BINARIES`]).
pub const BIN_DIR: &str = "bin";

/// The folder under `target/omptarget` of an [`ARTIFACTS`] library.
fn artifact_dir(shipped: bool) -> &'static str {
    if shipped {
        LIB_DIR
    } else {
        TEST_PLUGIN_DIR
    }
}

/// Every file [`stage`] writes, as (folder under `target/omptarget`, file
/// name; the folder is empty for the token), derived from the constants
/// [`stage`] stages from: README.md's layout of `target/omptarget` is
/// checked against it (`docs_check`).
#[cfg(test)]
pub fn staged_files() -> Vec<(&'static str, &'static str)> {
    let libraries = ARTIFACTS
        .iter()
        .map(|(_, _, name, shipped)| (artifact_dir(*shipped), *name));
    let aliases = SHIM_ALIASES.iter().map(|alias| (LIB_DIR, *alias));
    let binaries = BINARIES.iter().map(|(_, name)| (BIN_DIR, *name));
    libraries
        .chain(aliases)
        .chain(binaries)
        .chain([("", STAGED_TOKEN)])
        .collect()
}

/// `target/omptarget/<this>`: the token of the last staging (see [`stage`]).
pub const STAGED_TOKEN: &str = ".staged";

/// The names clang 19 and 22 binaries link `libomptarget.so` by (their
/// `DT_NEEDED`), and the name of LLVM 22's liboffload, whose `ol*` API
/// the same library serves (`ffi/program/shim/src/offload_api.rs`),
/// staged as symbolic links to it.
pub const SHIM_ALIASES: &[&str] = &[
    "libomptarget.so.19.1",
    "libomptarget.so.22.1",
    "libLLVMOffload.so.22.1",
];

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// Cargo's target folder: `CARGO_TARGET_DIR`, else the workspace's
/// `target/`. A relative `CARGO_TARGET_DIR` is made absolute against the
/// current directory, as cargo does (xtask runs where cargo was invoked).
/// The tests find the same folder another way, from their own executable
/// (`omptarget_test_support::paths::target_dir`): a test does not know the
/// directory cargo was invoked from.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_relative() => std::env::current_dir()
            .expect("the current directory")
            .join(dir),
        Some(dir) => dir,
        None => workspace_root().join("target"),
    }
}

/// `cargo build` of `packages` (`--release` or not) into the target
/// folder; the folder of what it built.
fn build<'a>(release: bool, packages: impl IntoIterator<Item = &'a str>) -> Result<PathBuf> {
    let root = workspace_root();
    let target = target_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // The folder resolved above, for cargo too: it would resolve a relative
    // CARGO_TARGET_DIR against `root`, not where we were invoked.
    cmd.current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .arg("build")
        .arg("--quiet");
    if release {
        cmd.arg("--release");
    }
    for package in packages {
        cmd.args(["-p", package]);
    }
    let status = cmd.status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of the plugins and the shim failed");
    }
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// The release build of the shipped libraries of `packages` (of
/// [`ARTIFACTS`]) alone, copied under their staged names (the shim's
/// [`SHIM_ALIASES`] too) into `into`, which is emptied first: the release
/// copy a check needs, without building what it does not.
pub fn release_copy(packages: &[&str], into: &Path) -> Result<()> {
    let built = build(true, packages.iter().copied())?;
    if into.exists() {
        std::fs::remove_dir_all(into).with_context(|| format!("removing {}", into.display()))?;
    }
    std::fs::create_dir_all(into)?;
    for (package, file, name, _) in ARTIFACTS {
        if packages.contains(package) {
            std::fs::copy(built.join(file), into.join(name))
                .with_context(|| format!("copying {file} into {}", into.display()))?;
        }
    }
    if packages.contains(&SHIM_PACKAGE) {
        link_shim_aliases(into)?;
    }
    Ok(())
}

/// [`SHIM_ALIASES`] in `dir`, each a symbolic link to `libomptarget.so`
/// made beside it and renamed into place (a reader never sees it missing).
fn link_shim_aliases(dir: &Path) -> Result<()> {
    for alias in SHIM_ALIASES {
        let tmp = dir.join(format!(".{alias}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink("libomptarget.so", &tmp)
            .with_context(|| format!("linking {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(alias))?;
    }
    Ok(())
}

/// The package of `libomptarget.so`.
pub const SHIM_PACKAGE: &str = "omptarget-shim";

/// The shim and the host and CUDA plugins: built by a cargo invocation of
/// their own, before the other packages, in every release build. Cargo
/// unifies the features of the crates below across the packages of one
/// invocation, and the features are part of every symbol's hash: built
/// with the MPI plugin and the tools, 1,858 of the shim's ~2,300 hashed
/// symbols came out different, so the code-layout lists (made from the
/// release copy that `cargo xtask test` checks, these three alone) named
/// functions that `stage --release` and `install` builds did not have.
pub const BUILT_FIRST: &[&str] = &[
    SHIM_PACKAGE,
    "omptarget-plugin-host-rtl",
    "omptarget-plugin-cuda-rtl",
];

pub fn stage(release: bool) -> Result<Staged> {
    let packages = ARTIFACTS
        .iter()
        .map(|a| a.0)
        .chain(BINARIES.iter().map(|b| b.0));
    // Only a release build places functions by the lists, so only a
    // release build pays for the second invocation (some crates below are
    // then compiled twice, once per feature set: 30 CPU-s of a debug
    // staging).
    let built = if release {
        let (first, rest): (Vec<&str>, Vec<&str>) = packages.partition(|p| BUILT_FIRST.contains(p));
        build(release, first)?;
        build(release, rest)?
    } else {
        build(release, packages)?
    };
    let target = target_dir();
    let omptarget = target.join("omptarget");
    let lib_dir = omptarget.join(LIB_DIR);
    let test_plugin_dir = omptarget.join(TEST_PLUGIN_DIR);
    for (_, file, name, shipped) in ARTIFACTS {
        let dir = omptarget.join(artifact_dir(*shipped));
        std::fs::create_dir_all(&dir)?;
        let src = built.join(file);
        if !src.exists() {
            // A crate may not produce its library yet (work in progress).
            continue;
        }
        // Copy then rename, so a concurrent reader never sees a half file
        // and a process that has the old one mapped keeps its inode.
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::copy(&src, &tmp).with_context(|| format!("copying {}", src.display()))?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    let bin_dir = omptarget.join(BIN_DIR);
    std::fs::create_dir_all(&bin_dir)?;
    for (_, name) in BINARIES {
        let src = built.join(name);
        let tmp = bin_dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::copy(&src, &tmp).with_context(|| format!("copying {}", src.display()))?;
        std::fs::rename(&tmp, bin_dir.join(name))?;
    }
    // clang 19 and 22 binaries ask for these names (`readelf -d`). Links to
    // the one file, not copies: the dynamic loader recognises a library by
    // its inode, so a clang-14 program that dlopens a clang-22 library gets
    // the runtime it already has, not a second one.
    link_shim_aliases(&lib_dir)?;
    // A new token per staging: `cargo xtask test` hands it to the tests
    // (OMPTARGET_TEST_STAGED), which trust the staged files only while the
    // token still matches, so an old value in someone's shell never makes
    // them test libraries staged before later changes.
    let token = format!(
        "{}-{}-{}",
        if release { "release" } else { "debug" },
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    std::fs::write(omptarget.join(STAGED_TOKEN), &token)?;
    Ok(Staged {
        lib_dir,
        test_plugin_dir,
    })
}
