//! Staging our runtime (`cargo run -q -p xtask -- stage`) once per process.

use crate::c_support::paths;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Runs the stage step the first time it is called and returns the staged
/// library directory if it holds `libomptarget.so`; later calls return the
/// first answer. The error says what is missing or how staging failed.
pub fn our_lib_dir() -> Result<PathBuf, String> {
    static STAGED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    STAGED.get_or_init(stage_once).clone()
}

fn stage_once() -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["run", "-q", "-p", "xtask", "--", "stage"])
        .current_dir(paths::workspace_root())
        .output()
        .map_err(|e| format!("running `cargo run -q -p xtask -- stage`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo run -q -p xtask -- stage` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let lib_dir = paths::our_lib_dir();
    let shim = lib_dir.join("libomptarget.so");
    if !shim.is_file() {
        return Err(format!(
            "{} does not exist after staging (the omptarget-shim crate does not build a \
             libomptarget.so yet?)",
            shim.display()
        ));
    }
    Ok(lib_dir)
}
