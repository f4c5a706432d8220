//! Running child processes: echo the command, inherit the terminal, turn a
//! failure into an error that names the command.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::process::Command;

/// The cargo that runs us (`$CARGO` under `cargo run`), else `cargo`.
pub fn cargo() -> Command {
    let cargo: OsString = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(crate::stage::workspace_root());
    cmd
}

/// Print `cmd`, run it with inherited stdio, fail unless it exits 0.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = show(cmd);
    println!("$ {shown}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

/// A command as a shell line (program and arguments, no environment).
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
