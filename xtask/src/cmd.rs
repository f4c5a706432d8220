//! Running child processes: echo the command, inherit the terminal (or,
//! for commands run at once, keep each one's output until it is shown),
//! turn a failure into an error that names the command.

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
/// core busy and measure nothing (valgrind runs), which one after another
/// leave the other core idle; never for timings, which sharing the cores
/// makes meaningless.
pub fn run_together(cmds: Vec<Command>) -> Result<()> {
    let mut running: Vec<(String, std::process::Child, std::fs::File)> = Vec::new();
    for mut cmd in cmds {
        let shown = show(&cmd);
        match start_logged(&mut cmd) {
            Ok((child, log)) => running.push((shown, child, log)),
            Err(e) => {
                // None left running behind the error.
                for (_, mut started, _) in running {
                    let _ = started.kill();
                    let _ = started.wait();
                }
                return Err(e).with_context(|| format!("cannot start {shown}"));
            }
        }
    }
    // Every child waited for and its failure kept, whatever happened to
    // another or to showing an output.
    let mut failed = Vec::new();
    for (shown, mut child, log) in running {
        let status = child.wait();
        println!("$ {shown}");
        if let Err(e) = show_output(log) {
            failed.push(format!("showing the output of {shown}: {e}"));
        }
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("{shown} failed ({status})")),
            Err(e) => failed.push(format!("waiting for {shown}: {e}")),
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    Ok(())
}

/// Start `cmd` with its stdout and stderr in an unnamed file. A file, not
/// a pipe: a child writing more than a pipe holds would block until it is
/// read, and the output is read only once the child has ended.
fn start_logged(cmd: &mut Command) -> std::io::Result<(std::process::Child, std::fs::File)> {
    let log = tempfile::tempfile()?;
    cmd.stdout(log.try_clone()?).stderr(log.try_clone()?);
    Ok((cmd.spawn()?, log))
}

/// Copy what a [`start_logged`] child wrote to our standard output.
fn show_output(mut log: std::fs::File) -> std::io::Result<()> {
    use std::io::{Seek, Write};
    log.rewind()?;
    std::io::copy(&mut log, &mut std::io::stdout().lock())?;
    std::io::stdout().flush()
}
