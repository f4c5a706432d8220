//! `cargo xtask test`: everything CI checks, as a list of named steps run in
//! order. To add a check, add a [`Step`] to [`STEPS`].

use crate::{cmd, dtors, stage};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Instant;

/// One check of `cargo xtask test`.
pub struct Step {
    pub name: &'static str,
    pub run: fn() -> Result<()>,
}

/// The steps, in order; the first failure stops the run.
pub const STEPS: &[Step] = &[
    Step {
        name: "stage (debug)",
        run: stage_debug,
    },
    Step {
        name: "cargo test --workspace",
        run: cargo_test_workspace,
    },
    Step {
        name: "no global destructors in staged libraries",
        run: no_global_dtors,
    },
];

pub fn test() -> Result<()> {
    let started = Instant::now();
    let mut timings = Vec::new();
    for step in STEPS {
        println!("==> {}", step.name);
        let t = Instant::now();
        let result = (step.run)();
        timings.push((step.name, t.elapsed()));
        if let Err(e) = result {
            print_timings(&timings);
            return Err(e.context(format!("step `{}` failed", step.name)));
        }
    }
    print_timings(&timings);
    println!(
        "all {} steps passed in {:.0?}",
        STEPS.len(),
        started.elapsed()
    );
    Ok(())
}

fn print_timings(timings: &[(&str, std::time::Duration)]) {
    println!("==> step times");
    for (name, d) in timings {
        println!("  {:>8.1?}  {name}", d);
    }
}

fn stage_debug() -> Result<()> {
    let staged = stage::stage(false)?;
    println!("staged into {}", staged.lib_dir.display());
    Ok(())
}

/// `cargo test --workspace`, echoing its output and repeating the
/// `test result:` lines (one per test binary) as a summary at the end.
fn cargo_test_workspace() -> Result<()> {
    let mut cmd = cmd::cargo();
    cmd.args(["test", "--workspace"]).stdout(Stdio::piped());
    println!("$ {}", cmd::show(&cmd));
    let mut child = cmd.spawn().context("starting cargo test")?;
    let stdout = child.stdout.take().expect("piped");
    let mut results = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo test output")?;
        println!("{line}");
        if line.starts_with("test result:") {
            results.push(line);
        }
    }
    let status = child.wait()?;
    println!("==> cargo test summary ({} test binaries)", results.len());
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    for r in &results {
        println!("  {r}");
        passed += count(r, " passed");
        failed += count(r, " failed");
        ignored += count(r, " ignored");
    }
    println!("  total: {passed} passed; {failed} failed; {ignored} ignored");
    if !status.success() {
        bail!("cargo test --workspace failed ({status})");
    }
    Ok(())
}

/// The number before `what` in a `test result:` line (`5 passed`).
fn count(line: &str, what: &str) -> u64 {
    line.find(what)
        .and_then(|end| line[..end].rsplit([' ', ';']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn no_global_dtors() -> Result<()> {
    let staged = stage::stage(false)?;
    let mut libs = dtors::shared_libraries(&staged.lib_dir)?;
    libs.extend(dtors::shared_libraries(&staged.test_plugin_dir)?);
    dtors::check(&libs)
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_come_from_the_summary_line() {
        let l = "test result: ok. 16 passed; 2 failed; 3 ignored; 0 measured; 0 filtered out";
        assert_eq!(count(l, " passed"), 16);
        assert_eq!(count(l, " failed"), 2);
        assert_eq!(count(l, " ignored"), 3);
    }
}
