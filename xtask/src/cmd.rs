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

/// Run `cmds` at the same time, each with its output (stdout and stderr)
/// captured into a file of its own, then print each output in the given
/// order; fail unless every one exits 0. For checks that each keep one
/// core busy (a valgrind run, a benchmark's quick pass), which one after
/// another leave the other core idle.
pub fn run_together(cmds: Vec<Command>) -> Result<()> {
    let mut running: Vec<(String, std::process::Child, std::fs::File)> = Vec::new();
    for mut cmd in cmds {
        let shown = show(&cmd);
        // A file, not a pipe: a child writing more than a pipe holds would
        // block until we read it, and we read only after all have ended.
        let log = tempfile::tempfile().context("creating a file for a command's output")?;
        cmd.stdout(log.try_clone()?).stderr(log.try_clone()?);
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                // None left running behind the error.
                for (_, mut started, _) in running {
                    let _ = started.kill();
                    let _ = started.wait();
                }
                return Err(e).with_context(|| format!("cannot start {shown}"));
            }
        };
        running.push((shown, child, log));
    }
    let mut failed = Vec::new();
    for (shown, mut child, mut log) in running {
        // Every child waited for, whatever happened to another.
        let status = match child.wait() {
            Ok(status) => status,
            Err(e) => {
                failed.push(format!("waiting for {shown}: {e}"));
                continue;
            }
        };
        println!("$ {shown}");
        use std::io::{Read, Seek, Write};
        let mut output = Vec::new();
        log.rewind()?;
        log.read_to_end(&mut output)?;
        std::io::stdout().write_all(&output)?;
        if !status.success() {
            failed.push(format!("{shown} failed ({status})"));
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    Ok(())
}
