//! `cargo xtask install --prefix DIR [--debug]`: the `omptarget` command
//! and the MPI device server `omptarget-mpi-device` in `DIR/bin`, the
//! runtime and its plugins in `DIR/lib`.
//!
//! `DIR/lib` gets everything `stage` puts in `target/omptarget/lib`, under
//! the same names, symbolic links included: `libomptarget.so` and every
//! other SONAME the supported clang releases ask for, and the shipped
//! plugins. The installed `omptarget` finds `DIR/lib` from its own
//! location, so `omptarget run` uses the installed libraries.
use crate::{cmd, stage};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Install into `prefix` (release build unless `debug`).
pub fn install(prefix: &Path, debug: bool) -> Result<()> {
    let staged = stage::stage(!debug)?;
    let mut build = cmd::cargo();
    build.args(["build", "--quiet", "-p", "omptarget-tool"]);
    if !debug {
        build.arg("--release");
    }
    cmd::run(&mut build)?;
    let exe = stage::target_dir()
        .join(if debug { "debug" } else { "release" })
        .join("omptarget");
    let bin = prefix.join("bin");
    let lib = prefix.join("lib");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    std::fs::create_dir_all(&lib).with_context(|| format!("creating {}", lib.display()))?;
    copy_file(&exe, &bin.join("omptarget"))?;
    println!("installed {}", bin.join("omptarget").display());
    // The MPI device server (`omptarget run --mpi` finds it in `LIB/../bin`).
    let staged_bin = staged.lib_dir.join("../bin");
    for (_, name) in stage::BINARIES {
        copy_file(&staged_bin.join(name), &bin.join(name))?;
        println!("installed {}", bin.join(name).display());
    }
    copy_libraries(&staged.lib_dir, &lib, |line| println!("installed {line}"))?;
    Ok(())
}

/// Copy the staged library folder `from` into `to`: its files, and its
/// links as links (the names clang 19/22 binaries link point at the shim).
/// `done` is told each name written. Used by install and by the test
/// step that keeps the release build's libraries.
pub fn copy_libraries(from: &Path, to: &Path, done: impl Fn(String)) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(from)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for src in entries {
        let name = src.file_name().context("a staged entry has no name")?;
        if name.to_string_lossy().starts_with('.') {
            continue; // a copy in progress of a concurrent stage
        }
        let dst = to.join(name);
        let meta = std::fs::symlink_metadata(&src)?;
        if meta.file_type().is_symlink() {
            let points_to = std::fs::read_link(&src)?;
            let _ = std::fs::remove_file(&dst);
            std::os::unix::fs::symlink(&points_to, &dst)
                .with_context(|| format!("linking {}", dst.display()))?;
            done(format!("{} -> {}", dst.display(), points_to.display()));
        } else if meta.is_file() {
            copy_file(&src, &dst)?;
            done(dst.display().to_string());
        }
    }
    Ok(())
}

/// Copy then rename: a running program keeps the inode it mapped.
fn copy_file(src: &Path, dst: &Path) -> Result<()> {
    let tmp = dst.with_file_name(format!(
        ".{}.{}",
        dst.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::copy(src, &tmp).with_context(|| format!("copying {}", src.display()))?;
    std::fs::rename(&tmp, dst).with_context(|| format!("installing {}", dst.display()))?;
    Ok(())
}

/// The `cargo xtask test` step: install (debug build) into
/// `target/install-check`, then run a clang-14 program through the
/// installed `omptarget run` and check, with the dynamic loader's own
/// trace (`LD_DEBUG=libs`), that it loaded the installed `libomptarget.so`.
pub fn check() -> Result<()> {
    let prefix = stage::target_dir().join("install-check");
    if prefix.exists() {
        std::fs::remove_dir_all(&prefix)?;
    }
    install(&prefix, true)?;
    let prefix = prefix.canonicalize()?;
    let program = prefix.join("saxpy_offload");
    cmd::run(
        Command::new("clang-14")
            .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O2"])
            .arg(stage::workspace_root().join("examples/c/saxpy_offload.c"))
            .arg("-o")
            .arg(&program),
    )?;
    let omptarget = prefix.join("bin/omptarget");
    let out = Command::new(&omptarget)
        .args(["run", "--leak-report", "--"])
        .arg(&program)
        .env_remove("LD_LIBRARY_PATH")
        .env("LD_DEBUG", "libs")
        .output()
        .context("running the installed omptarget")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let runtime = prefix.join("lib/libomptarget.so");
    // The host devices are built into libomptarget.so: its plugin file is
    // installed (for OMPTARGET_PLUGINS) but not loaded; the CUDA plugin is
    // loaded from the install (and reports no device without a driver).
    let plugin = prefix.join("lib/libomptarget.rtl.cuda.so");
    let host_plugin = prefix.join("lib/libomptarget.rtl.x86_64.so");
    // Every name the staged folder has (the SONAMEs clang 19/22 binaries
    // ask for among them) is installed and leads to the same runtime.
    let staged = stage::target_dir().join("omptarget/lib");
    for entry in std::fs::read_dir(&staged)? {
        let name = entry?.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let installed = prefix.join("lib").join(&name);
        if !installed.exists() {
            bail!("{} was not installed", installed.display());
        }
        let staged_name = staged.join(&name).canonicalize()?;
        let same = staged_name.file_name() == installed.canonicalize()?.file_name();
        if !same {
            bail!(
                "{} leads elsewhere than {}",
                installed.display(),
                staged_name.display()
            );
        }
    }
    if !out.status.success() {
        bail!(
            "the installed `omptarget run` failed ({}):\n{stderr}",
            out.status
        );
    }
    for lib in [&runtime, &plugin] {
        if !stderr.contains(&format!("calling init: {}", lib.display())) {
            bail!("the program did not load {}:\n{stderr}", lib.display());
        }
    }
    if stderr.contains(&format!("calling init: {}", host_plugin.display())) {
        bail!(
            "the program loaded {}, though its host devices are built in:\n{stderr}",
            host_plugin.display()
        );
    }
    if !stderr.contains("omptarget leak report: no leaks") {
        bail!("no clean leak report:\n{stderr}");
    }
    println!(
        "{} ran {} on {} and {}",
        omptarget.display(),
        program.display(),
        runtime.display(),
        plugin.display()
    );
    check_mpi(&omptarget, &program)
}

/// The installed `omptarget run --mpi 1`: the program's devices are the
/// installed host plugin's 4 and the installed server's, and it computes
/// on all of them (the program checks its results). Skipped where Open
/// MPI is not installed (`cargo xtask deps` installs it).
fn check_mpi(omptarget: &Path, program: &Path) -> Result<()> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("no mpirun: the installed `omptarget run --mpi` is not checked");
        return Ok(());
    }
    let out = Command::new(omptarget)
        .args(["run", "--mpi", "1", "--"])
        .arg(program)
        .env_remove("LD_LIBRARY_PATH")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .context("running the installed omptarget run --mpi")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.starts_with("devices: 8 ") || !stdout.ends_with("ok\n") {
        bail!(
            "the installed `omptarget run --mpi 1` failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!(
        "{} run --mpi 1 ran {} on 8 devices (4 of them remote)",
        omptarget.display(),
        program.display()
    );
    Ok(())
}
