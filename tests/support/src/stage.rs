//! The staged libraries (`cargo run -q -p xtask -- stage`): our
//! `libomptarget.so` and the plugins, copied to fixed folders of the target
//! directory.
//!
//! With `OMPTARGET_TEST_STAGED=<token>` (set by `cargo xtask test` after
//! its own stage step to the token that staging wrote to
//! `<target>/omptarget/.staged`) no cargo runs at all: the staged files are
//! only checked. A value that is not the current token (an old one left in
//! a shell, a staging since) is ignored.
//! Otherwise the first call of a process stages, serialised across
//! processes (cargo-nextest runs one process per test) by an `flock` on
//! `<target>/omptarget/.stage.lock`.

use crate::lock::FileLock;
use crate::paths;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Where the stage step put the libraries.
#[derive(Clone, Debug)]
pub struct Staged {
    /// `<target>/omptarget/lib`: `libomptarget.so` (the shim, with the names
    /// clang 19/22 binaries link it by) and the shipped plugins.
    pub lib_dir: PathBuf,
    /// `<target>/omptarget/test-plugins`: plugins that exist for tests only.
    pub test_plugin_dir: PathBuf,
}

/// The files every test may rely on, relative to the staged folders.
const LIBS: &[&str] = &[
    "libomptarget.so",
    "libomptarget.rtl.x86_64.so",
    "libomptarget.rtl.cuda.so",
];
const TEST_PLUGINS: &[&str] = &["libomptarget.rtl.test.so", "libomptarget.rtl.incomplete.so"];

/// The staged folders, staging first unless `OMPTARGET_TEST_STAGED=1`;
/// panics with what failed or is missing (see [`try_staged`]).
pub fn staged() -> &'static Staged {
    try_staged().unwrap_or_else(|e| panic!("{e}"))
}

/// [`staged`], with the failure as an error (for suites that can still
/// check their reference side without our runtime). The first call of a
/// process decides; later calls return its answer.
pub fn try_staged() -> Result<&'static Staged, String> {
    static STAGED: OnceLock<Result<Staged, String>> = OnceLock::new();
    STAGED
        .get_or_init(stage_once)
        .as_ref()
        .map_err(Clone::clone)
}

fn stage_once() -> Result<Staged, String> {
    let omptarget = paths::omptarget_dir();
    let staged = Staged {
        lib_dir: omptarget.join("lib"),
        test_plugin_dir: omptarget.join("test-plugins"),
    };
    let token = std::fs::read_to_string(omptarget.join(".staged")).ok();
    if let Some(given) = std::env::var_os("OMPTARGET_TEST_STAGED") {
        if token.as_deref().map(str::trim) == given.to_str() {
            return check(&staged, "OMPTARGET_TEST_STAGED says it was staged, but");
        }
    }
    let _lock = FileLock::acquire(&omptarget.join(".stage.lock"))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["run", "-q", "-p", "xtask", "--", "stage"])
        .current_dir(paths::workspace_root())
        // The target directory this test runs from, whatever the
        // environment says (a relative CARGO_TARGET_DIR would be resolved
        // against the workspace root).
        .env("CARGO_TARGET_DIR", paths::target_dir())
        .output()
        .map_err(|e| format!("running `cargo run -q -p xtask -- stage`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo run -q -p xtask -- stage` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    check(&staged, "after `cargo run -q -p xtask -- stage`")
}

fn check(staged: &Staged, context: &str) -> Result<Staged, String> {
    let missing: Vec<String> = LIBS
        .iter()
        .map(|f| staged.lib_dir.join(f))
        .chain(TEST_PLUGINS.iter().map(|f| staged.test_plugin_dir.join(f)))
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        Ok(staged.clone())
    } else {
        Err(format!(
            "{context} these were not staged: {}",
            missing.join(", ")
        ))
    }
}
