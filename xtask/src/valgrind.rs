//! `cargo xtask valgrind <test>`: run one integration test binary under
//! valgrind's leak checker, one test thread, failing on definite or
//! indirect leaks and on any memory error.

use crate::cmd;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Build the integration test `name` (any workspace package) and return
/// its executable, from cargo's JSON messages.
pub fn test_executable(name: &str) -> Result<PathBuf> {
    let mut cmd = cmd::cargo();
    cmd.args([
        "test",
        "--workspace",
        "--no-run",
        "--message-format=json",
        "--test",
        name,
    ])
    .stdout(Stdio::piped());
    println!("$ {}", cmd::show(&cmd));
    let mut child = cmd.spawn().context("starting cargo test --no-run")?;
    let mut found = None;
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let target = &msg["target"];
        if msg["reason"] == "compiler-artifact"
            && target["name"] == name
            && target["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "test"))
        {
            if let Some(exe) = msg["executable"].as_str() {
                found = Some(PathBuf::from(exe));
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("building test `{name}` failed ({status})");
    }
    found.with_context(|| format!("cargo built no integration test named `{name}`"))
}

pub fn valgrind(name: &str, extra: &[String]) -> Result<()> {
    cmd::run(&mut command(name, extra)?)
}

/// The valgrind command line of [`valgrind`], its test binary built.
pub fn command(name: &str, extra: &[String]) -> Result<Command> {
    let exe = test_executable(name)?;
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect",
        "--error-exitcode=1",
        // Valgrind runs one thread at a time; without fair scheduling a
        // thread that loops (the global-access test's readers, beside
        // kernels that spin) holds the CPU for long stretches: that test
        // took 91 s under memcheck, 2.1 s with this.
        "--fair-sched=yes",
    ])
    .arg(&exe)
    .arg("--test-threads=1")
    .args(extra)
    .current_dir(crate::stage::workspace_root());
    Ok(cmd)
}
