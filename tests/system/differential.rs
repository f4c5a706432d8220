//! Differential suite: every program in `tests/c` (OpenMP offload programs,
//! see tests/c/README.md) is built with clang-14, clang-19 and clang-22
//! (one test per release), and each binary runs on its own release's
//! libomptarget (the reference: LLVM 14's in `/usr/lib/llvm-14/lib`, LLVM
//! 19's and 22's unpacked by `cargo xtask deps`) and on ours
//! (`target/omptarget/lib`, staged with `cargo run -q -p xtask -- stage`);
//! exit status and stdout must be identical, and stderr too (hex addresses
//! normalised) for programs marked `// CHECK-STDERR` (for the releases it
//! names, if any). Each reference run must also end as the program's
//! `// EXIT:` (or `// EXIT-19:`, `// EXIT-22:`) directive says, so a changed
//! or broken reference is noticed.
//!
//! Environment knobs:
//! - `OMPTARGET_DIFF_SELFCHECK=1`: check mode. Runs only the reference, twice
//!   per program, and requires both runs to agree (and to match `EXIT:`):
//!   proof that each program is deterministic enough to be compared at all.
//!   Run it after adding or changing a program.
//! - `OMPTARGET_DIFF_FILTER=substr`: only programs whose name contains it.
//! - `OMPTARGET_DIFF_JOBS=n`: parallel jobs (default: available cores).
//! - `OMPTARGET_DIFF_TIMEOUT=secs`: per-run timeout (default 60).
//! - `OMPTARGET_DIFF_OURS_DIR=dir`: compare against the libomptarget.so in
//!   `dir` instead of staging ours (e.g. a release staging, or LLVM's own
//!   runtime copied elsewhere to test the harness).
//!
//! Outputs of every run are kept next to the binary in
//! `target/omptarget/c-tests/<program>/` (`reference.stdout`, `ours.stderr`,
//! ...) for inspection.

use omptarget_test_support::compare::{line_diff, normalise_addresses};
use omptarget_test_support::exec::{self, RunOutput};
use omptarget_test_support::release::Release;
use omptarget_test_support::suite::build::{self, Built, Toolchain};
use omptarget_test_support::suite::pool;
use omptarget_test_support::suite::spec::{self, Program};
use omptarget_test_support::{paths, stage};
use std::time::Duration;

/// The suite is meant to cover this many programs at least; fewer means the
/// directory was not found or programs were lost.
const MIN_PROGRAMS: usize = 45;

fn timeout() -> Duration {
    let secs = std::env::var("OMPTARGET_DIFF_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// The verdict for one program.
enum Outcome {
    Pass,
    /// The reference side is fine but our runtime could not be staged.
    ReferenceOnly,
    Fail(String),
}

/// Runs `built` with LD_LIBRARY_PATH=`lib_dir` and saves its outputs as
/// `<label>.stdout` / `<label>.stderr` / `<label>.exit` in its build dir.
fn run_on(
    program: &Program,
    built: &Built,
    lib_dir: impl AsRef<std::ffi::OsStr>,
    label: &str,
) -> Result<RunOutput, String> {
    let cmd = exec::command(&built.binary, &built.args, &program.env, lib_dir);
    let out = exec::run(cmd, timeout())
        .map_err(|e| format!("cannot run {}: {e}", built.binary.display()))?;
    let save = |ext: &str, text: &str| {
        let _ = std::fs::write(built.out_dir.join(format!("{label}.{ext}")), text);
    };
    save("stdout", &out.stdout);
    save("stderr", &out.stderr);
    save("exit", &out.exit_text());
    Ok(out)
}

/// Differences between two runs of `program` (`a` plays the reference),
/// or an empty list.
fn differences(
    program: &Program,
    release: Release,
    a: &RunOutput,
    a_name: &str,
    b: &RunOutput,
    b_name: &str,
) -> Vec<String> {
    let mut diffs = Vec::new();
    if a.exit.is_none() || b.exit.is_none() || a.exit != b.exit {
        diffs.push(format!(
            "exit status: {a_name} {}, {b_name} {}",
            a.exit_text(),
            b.exit_text()
        ));
    }
    let d = line_diff(&a.stdout, &b.stdout, 3);
    if !d.is_empty() {
        diffs.push(format!("stdout (-{a_name} +{b_name}):\n{d}"));
    }
    if program.checks_stderr(release) {
        let d = line_diff(
            &normalise_addresses(&a.stderr),
            &normalise_addresses(&b.stderr),
            3,
        );
        if !d.is_empty() {
            diffs.push(format!(
                "stderr, addresses normalised (-{a_name} +{b_name}):\n{d}"
            ));
        }
    }
    diffs
}

/// The reference must end as the program's EXIT directive says.
fn check_expected_exit(
    program: &Program,
    release: Release,
    reference: &RunOutput,
) -> Result<(), String> {
    let expected = program.expected_exit_for(release);
    if reference.exit == Some(expected) {
        return Ok(());
    }
    Err(format!(
        "reference run ended with {} but `// EXIT:` expects {} (stderr:\n{})",
        reference.exit_text(),
        expected,
        indent(&reference.stderr)
    ))
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// Normal mode: reference once, ours once, compare.
fn check_against_ours(
    program: &Program,
    tc: &Toolchain,
    ours: &Result<std::path::PathBuf, String>,
) -> Outcome {
    let built = match build::build(program, tc) {
        Ok(b) => b,
        Err(e) => return Outcome::Fail(e),
    };
    let release = tc.release;
    let reference = match run_on(program, &built, release.reference_lib_dir(), "reference") {
        Ok(r) => r,
        Err(e) => return Outcome::Fail(e),
    };
    if let Err(e) = check_expected_exit(program, release, &reference) {
        return Outcome::Fail(e);
    }
    let Ok(our_dir) = ours else {
        return Outcome::ReferenceOnly;
    };
    let ours = match run_on(program, &built, release.our_library_path(our_dir), "ours") {
        Ok(r) => r,
        Err(e) => return Outcome::Fail(e),
    };
    let diffs = differences(program, release, &reference, "reference", &ours, "ours");
    if diffs.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(diffs.join("\n"))
    }
}

/// Self-check mode: the reference twice, both runs must agree.
fn check_reference_determinism(program: &Program, tc: &Toolchain) -> Outcome {
    let built = match build::build(program, tc) {
        Ok(b) => b,
        Err(e) => return Outcome::Fail(e),
    };
    let runs: Result<Vec<RunOutput>, String> = ["reference", "reference2"]
        .iter()
        .map(|label| run_on(program, &built, tc.release.reference_lib_dir(), label))
        .collect();
    let runs = match runs {
        Ok(r) => r,
        Err(e) => return Outcome::Fail(e),
    };
    if let Err(e) = check_expected_exit(program, tc.release, &runs[0]) {
        return Outcome::Fail(e);
    }
    let diffs = differences(program, tc.release, &runs[0], "run1", &runs[1], "run2");
    if diffs.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(format!("reference runs differ:\n{}", diffs.join("\n")))
    }
}

fn verdict(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::ReferenceOnly => "ref-ok",
        Outcome::Fail(_) => "FAIL",
    }
}

#[test]
fn c_programs_match_llvm14() {
    run_suite(Release::Llvm14);
}

#[test]
fn c_programs_built_by_clang_19_match_llvm19() {
    run_suite(Release::Llvm19);
}

#[test]
fn c_programs_built_by_clang_22_match_llvm22() {
    run_suite(Release::Llvm22);
}

/// Build every program of `release` with its clang, run each on the
/// release's runtime and ours, and compare.
fn run_suite(release: Release) {
    let tc = Toolchain::detect_release(release).unwrap_or_else(|e| panic!("{e}"));
    let filter = std::env::var("OMPTARGET_DIFF_FILTER").ok();
    let programs: Vec<Program> = spec::discover(&paths::programs_dir(), filter.as_deref())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|p| p.releases.contains(&release))
        .collect();
    if filter.is_none() {
        assert!(
            programs.len() >= MIN_PROGRAMS,
            "found only {} programs in {}",
            programs.len(),
            paths::programs_dir().display()
        );
    }
    if programs.is_empty() {
        // A filter may name programs of other releases only (RELEASES).
        eprintln!(
            "no clang-{} program matches OMPTARGET_DIFF_FILTER={filter:?}",
            release.major()
        );
        return;
    }
    let selfcheck = std::env::var("OMPTARGET_DIFF_SELFCHECK").is_ok_and(|v| v == "1");
    let ours = if selfcheck {
        Err(String::new())
    } else if let Some(dir) = std::env::var_os("OMPTARGET_DIFF_OURS_DIR") {
        Ok(std::path::PathBuf::from(dir))
    } else {
        stage::try_staged().map(|s| s.lib_dir.clone())
    };
    if let Err(e) = &ours {
        if !selfcheck {
            eprintln!("our runtime is unavailable, only the reference side can be checked:\n{e}");
        }
    }
    let jobs = pool::jobs();
    let outcomes = pool::par_map(&programs, jobs, |program| {
        let outcome = if selfcheck {
            check_reference_determinism(program, &tc)
        } else {
            check_against_ours(program, &tc, &ours)
        };
        // Progress goes to stderr as programs finish (visible with --nocapture).
        eprintln!("  {} {}", verdict(&outcome), program.name);
        outcome
    });
    let mode = if selfcheck {
        "reference self-check"
    } else {
        "reference vs ours"
    };
    let mut summary = format!(
        "C differential suite, clang-{} ({mode}, {jobs} jobs):\n",
        release.major()
    );
    let mut failures = String::new();
    let (mut passed, mut failed, mut reference_only) = (0, 0, 0);
    for (program, outcome) in programs.iter().zip(&outcomes) {
        summary.push_str(&format!(
            "  {:<8} {}\n",
            verdict(outcome),
            program.file_name
        ));
        match outcome {
            Outcome::Pass => passed += 1,
            Outcome::ReferenceOnly => reference_only += 1,
            Outcome::Fail(why) => {
                failed += 1;
                failures.push_str(&format!(
                    "==== {} ====\n{}\n\n",
                    program.file_name,
                    why.trim_end()
                ));
            }
        }
    }
    summary.push_str(&format!("{passed} passed, {failed} failed"));
    if reference_only > 0 {
        summary.push_str(&format!(", {reference_only} only checked on the reference"));
    }
    summary.push('\n');
    println!("{summary}");
    let staged_note = match &ours {
        Err(e) if !selfcheck => {
            format!("\nour runtime could not be staged, so nothing ran on it: {e}\n")
        }
        _ => String::new(),
    };
    if failed > 0 || !staged_note.is_empty() {
        panic!("{summary}{staged_note}\n{failures}");
    }
}
