//! `cargo xtask test`: everything CI checks, as a list of named steps run in
//! order. To add a check, add a [`Step`] to [`STEPS`].

use crate::{cmd, dtors, stage, valgrind};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Passed, failed and ignored tests of `cargo test --workspace`.
static TOTALS: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

/// One check of `cargo xtask test`.
pub struct Step {
    pub name: &'static str,
    pub run: fn() -> Result<()>,
}

/// The steps, in order; the first failure stops the run.
pub const STEPS: &[Step] = &[
    Step {
        name: "lint: cargo fmt --check, cargo clippy -D warnings, cargo doc -D warnings",
        run: crate::lint,
    },
    Step {
        name: "stage (the release copy of the shim and host and CUDA plugins, for valgrind and the code layout; then debug)",
        run: stage_release_then_debug,
    },
    Step {
        name: "the workspace's tests: cargo nextest run --workspace, then the doc tests",
        run: workspace_tests,
    },
    Step {
        name: "the Rust API examples, run",
        run: run_examples,
    },
    Step {
        name: "install (debug) into target/install-check, run a clang-14 program through it",
        run: crate::install::check,
    },
    Step {
        name: "benchmarks, each run once (quick mode: results checked, no time asserted)",
        run: benchmarks_once,
    },
    Step {
        name: "loom: the shim's lifecycle state machine, every interleaving",
        run: loom_lifecycle,
    },
    Step {
        name: "no global destructors in staged libraries",
        run: no_global_dtors,
    },
    Step {
        name: "valgrind: the Rust API test binaries",
        run: valgrind_rust_api,
    },
    Step {
        name: "code layout: the text-order lists still name the release build's functions",
        run: text_order_check,
    },
    Step {
        name: "LLVM's lit suites (14, 19, 22): what passes on the release's runtime passes on ours, in both link forms",
        run: llvm_lit_suites,
    },
];

pub fn test() -> Result<()> {
    let started = Instant::now();
    let mut timings = Vec::new();
    for step in STEPS {
        println!("==> {}", step.name);
        let t = Instant::now();
        let cpu = children_cpu();
        let result = (step.run)();
        timings.push((step.name, t.elapsed(), children_cpu() - cpu));
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
    // The closing line, in the plain form CI reads: the workspace's tests.
    let [passed, failed, ignored] = TOTALS.each_ref().map(|t| t.load(Ordering::Relaxed));
    println!("tests: {passed} passed, {failed} failed, {ignored} skipped");
    Ok(())
}

/// A step's wall time and the CPU time (user + system) of the processes
/// it waited for: CPU over wall shows how well it used the cores, and the
/// CPU sum is the floor any schedule of the steps has to meet.
type Timing = (&'static str, Duration, Duration);

fn print_timings(timings: &[Timing]) {
    println!("==> step times (wall, CPU of its processes)");
    for (name, wall, cpu) in timings {
        println!("  {:>8.1?} {:>8.1?}  {name}", wall, cpu);
    }
    let cpu: Duration = timings.iter().map(|t| t.2).sum();
    println!("  CPU in all: {cpu:.0?}");
}

/// The user and system time of every child this process has waited for
/// (and of their waited-for children), from `getrusage(RUSAGE_CHILDREN)`.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Build the release copy of the libraries the checks below need in
/// their shipped form ([`RELEASE_CHECKED`]) into [`RELEASE_LIB_DIR`], then
/// stage the debug build, which every other test uses.
/// `tests/system/valgrind_c.rs` and the shim's edge programs under
/// valgrind check the release copy ([`VALGRIND_LIB_ENV`]): it is the
/// build users install and leak-check,
/// and memcheck runs it 2.3 times as fast as the debug build (map_alloc.c:
/// 2.89 s -> 1.24 s), which is most of that suite's time; the code-layout
/// step reads its symbols. The other release artifacts (the MPI plugin and
/// server, the test plugins) no test uses: each is a fat-LTO link of its
/// own, 30 CPU-s in all, not spent.
fn stage_release_then_debug() -> Result<()> {
    let kept = build_release_copy()?;
    println!(
        "built the release copy of {RELEASE_CHECKED:?} into {}",
        kept.display()
    );
    let staged = stage::stage(false)?;
    println!("staged into {}", staged.lib_dir.display());
    Ok(())
}

/// The packages of the release copy: the shim and the host plugin
/// (memcheck's runs of the C programs: `valgrind_c`, the shim's edge
/// tests), and the CUDA plugin (its text-order list is checked). Every
/// library of `scripts/text-order.py`'s `LIBRARIES` must be among them (a
/// test below holds the two to each other).
const RELEASE_CHECKED: &[&str] = stage::BUILT_FIRST;

/// `target/omptarget/lib-release`: the release build's staged libraries.
const RELEASE_LIB_DIR: &str = "lib-release";

/// hwloc's choice of discovery components.
const HWLOC_COMPONENTS: &str = "HWLOC_COMPONENTS";

/// The variable that points the valgrind runs of the C programs
/// (`tests/system/valgrind_c.rs`, the shim's edge tests) at a library
/// folder.
const VALGRIND_LIB_ENV: &str = "OMPTARGET_VALGRIND_LIB_DIR";

/// The release copy ([`RELEASE_CHECKED`] alone, as `test` builds it) in
/// [`RELEASE_LIB_DIR`]; its folder. Its symbols are what the code-layout
/// check reads, so `scripts/text-order.py` profiles this build: building
/// more packages at once unifies features differently and changes every
/// symbol hash of the crates below.
pub fn build_release_copy() -> Result<std::path::PathBuf> {
    let kept = release_lib_dir();
    stage::release_copy(RELEASE_CHECKED, &kept)?;
    Ok(kept)
}

fn release_lib_dir() -> std::path::PathBuf {
    stage::target_dir().join("omptarget").join(RELEASE_LIB_DIR)
}

/// The token `stage_release_then_debug` left (`target/omptarget/.staged`), which the
/// tests compare with [`STAGED_ENV`].
fn staged_token() -> Result<String> {
    let path = stage::target_dir()
        .join("omptarget")
        .join(stage::STAGED_TOKEN);
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// The loom model of `ffi/shared/lifecycle` (its own target dir: `--cfg loom`
/// rebuilds everything it touches). A debug build: loom explores the same
/// interleavings at any optimisation level, and the model's 1.1 s there
/// (0.35 s in release) costs less than building loom's dependencies
/// optimised (the step: 23.4 s wall, 31.7 CPU-s in release; 7.5 s, 13 in
/// debug).
fn loom_lifecycle() -> Result<()> {
    let root = stage::workspace_root();
    println!("$ RUSTFLAGS=\"--cfg loom\" cargo test -p omptarget-lifecycle --test loom");
    let status = cmd::cargo()
        .current_dir(&root)
        .env("RUSTFLAGS", "--cfg loom")
        .args(["test", "-p", "omptarget-lifecycle", "--test", "loom"])
        .arg("--target-dir")
        .arg(root.join("target/loom"))
        .status()
        .context("starting the loom model")?;
    anyhow::ensure!(status.success(), "the loom model failed: {status}");
    Ok(())
}

/// Tells the tests that `stage_release_then_debug` already staged the libraries (its
/// token), so that no test process runs `cargo run -p xtask -- stage`
/// again (under nextest every test is a process of its own).
const STAGED_ENV: &str = "OMPTARGET_TEST_STAGED";

/// The workspace's tests. With cargo-nextest (`cargo xtask deps` installs
/// it): every test a process of its own, spread over the cores by
/// `.config/nextest.toml` (which also holds the hang limits), then the
/// doc tests, which nextest does not run. Without it: `cargo test
/// --workspace`, test binaries one after another.
fn workspace_tests() -> Result<()> {
    if !nextest_installed() {
        println!(
            "cargo-nextest {}.{}.{} or newer is not installed (`cargo xtask deps` installs it): \
             cargo test, without the hang limits of .config/nextest.toml",
            NEXTEST_MIN.0, NEXTEST_MIN.1, NEXTEST_MIN.2
        );
        return cargo_test(
            &["test", "--workspace", "--no-fail-fast", "--color=never"],
            Counting::TestResults,
        );
    }
    let threads = format!("--test-threads={}", nextest_threads());
    let nextest = cargo_test(
        &[
            "nextest",
            "run",
            "--workspace",
            "--no-fail-fast",
            "--color=never",
            &threads,
        ],
        Counting::NextestSummary,
    );
    let doc = cargo_test(
        &["test", "--workspace", "--doc", "--color=never"],
        Counting::TestResults,
    );
    nextest.and(doc)
}

/// Test slots: three per core. Many tests mostly wait (on an MPI job's
/// start, a server's silence limit, a child process), so one per core left
/// the cores a quarter idle: the tests beside the exclusive group of
/// `.config/nextest.toml` (which claims every slot) took 160 s wall at 2
/// slots on 2 cores, 139 s at 4, 128 s at 6, on the same CPU time.
fn nextest_threads() -> usize {
    3 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The oldest cargo-nextest that reads `.config/nextest.toml` (its
/// `nextest-version`: test priorities came in 0.9.91).
pub const NEXTEST_MIN: (u64, u64, u64) = (0, 9, 91);

/// `cargo nextest --version` answers with [`NEXTEST_MIN`] or newer.
pub fn nextest_installed() -> bool {
    let Ok(out) = cmd::cargo()
        .args(["nextest", "--version"])
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    out.status.success()
        && nextest_version(&String::from_utf8_lossy(&out.stdout)).is_some_and(|v| v >= NEXTEST_MIN)
}

/// `cargo-nextest 0.9.143 (60fa45f63 2026-08-04)` -> (0, 9, 143).
fn nextest_version(text: &str) -> Option<(u64, u64, u64)> {
    let word = text.split_whitespace().nth(1)?;
    let mut parts = word.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// Which closing lines count the tests of a run.
#[derive(Clone, Copy, PartialEq)]
enum Counting {
    /// libtest's `test result: ok. N passed; N failed; N ignored` per binary.
    TestResults,
    /// nextest's `Summary [ T] N tests run: N passed, N failed, N skipped`.
    NextestSummary,
}

/// `cargo ARGS`, echoing its output (stderr merged, so every libtest
/// result pairs with the binary cargo named before it), adding its counts
/// to [`TOTALS`], and listing each binary's result at the end.
fn cargo_test(args: &[&str], counting: Counting) -> Result<()> {
    let cargo = cmd::cargo();
    let token = staged_token()?;
    let mut cmd = std::process::Command::new("sh");
    cmd.current_dir(stage::workspace_root())
        .env(STAGED_ENV, token.trim())
        .env(VALGRIND_LIB_ENV, release_lib_dir());
    // The MPI jobs of the tests skip hwloc's discovery of PCI devices and
    // Linux I/O objects (unless the caller chose components): Open MPI and
    // MPICH run hwloc in the launcher and in every rank, and on a virtual
    // machine each read of a device's PCI configuration space traps to the
    // hypervisor, 18% of the remote suite's CPU time (perf:
    // `pci_user_read_config_dword`); the suite, 50 tests at 6 slots: 141-152
    // -> 129-137 CPU-s. The tests place no process by device locality;
    // the CPU and memory topology is still discovered. Only here: a user's
    // MPI job on a cluster may need those objects (network cards near a GPU).
    if std::env::var_os(HWLOC_COMPONENTS).is_none() {
        cmd.env(HWLOC_COMPONENTS, "-pci,-linuxio");
    }
    cmd.args(["-c", "exec \"$0\" \"$@\" 2>&1"])
        .arg(cargo.get_program())
        .args(args)
        .stdout(Stdio::piped());
    let shown = format!("cargo {}", args.join(" "));
    println!(
        "$ {STAGED_ENV}={} {VALGRIND_LIB_ENV}={} {shown}",
        token.trim(),
        release_lib_dir().display()
    );
    let mut child = cmd.spawn().with_context(|| format!("starting {shown}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut binary = String::from("?");
    let mut results: Vec<(String, String)> = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.with_context(|| format!("reading the output of {shown}"))?;
        println!("{line}");
        let trimmed = line.trim_start();
        if let Some(what) = trimmed
            .strip_prefix("Running ")
            .or_else(|| trimmed.strip_prefix("Doc-tests "))
        {
            binary = if trimmed.starts_with("Doc-tests") {
                format!("doc-tests {what}")
            } else {
                binary_name(what)
            };
        } else if counting == Counting::TestResults && trimmed.starts_with("test result:") {
            results.push((binary.clone(), trimmed.to_string()));
        } else if counting == Counting::NextestSummary
            && trimmed.starts_with("Summary [")
            && trimmed.contains(" tests run: ")
        {
            results.push(("cargo nextest run --workspace".into(), trimmed.to_string()));
        }
    }
    let status = child.wait()?;
    println!("==> {shown}: summary ({} lines)", results.len());
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    for (bin, r) in &results {
        println!("  {bin}: {r}");
        passed += count(r, " passed");
        // nextest: "N failed", "N exec failed" (a binary that did not
        // start), "N timed out".
        failed += count(r, " failed") + count(r, " exec failed") + count(r, " timed out");
        ignored += count(r, " ignored") + count(r, " skipped");
    }
    println!("  total: {passed} passed; {failed} failed; {ignored} ignored or skipped");
    TOTALS[0].fetch_add(passed, Ordering::Relaxed);
    TOTALS[1].fetch_add(failed, Ordering::Relaxed);
    TOTALS[2].fetch_add(ignored, Ordering::Relaxed);
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    if results.is_empty() {
        bail!("{shown} printed no closing line: did it run any test?");
    }
    Ok(())
}

/// `unittests src/lib.rs (target/debug/deps/omptarget_abi-1a2b)` ->
/// `omptarget_abi unittests src/lib.rs`.
fn binary_name(running: &str) -> String {
    let (what, path) = running.split_once(" (").unwrap_or((running, ""));
    let file = path.trim_end_matches(')').rsplit('/').next().unwrap_or("");
    let stem = file.rsplit_once('-').map_or(file, |(stem, _hash)| stem);
    format!("{stem} {what}").trim().to_string()
}

/// The number before `what` in a closing line (`5 passed`), 0 if absent
/// (`what` is looked for wherever a number stands before it, so " failed"
/// does not read the "exec" of "2 exec failed").
fn count(line: &str, what: &str) -> u64 {
    line.match_indices(what)
        .find_map(|(end, _)| line[..end].rsplit([' ', ';', ':']).next()?.parse().ok())
        .unwrap_or(0)
}

fn no_global_dtors() -> Result<()> {
    let staged = stage::stage(false)?;
    let mut libs = dtors::shared_libraries(&staged.lib_dir)?;
    libs.extend(dtors::shared_libraries(&staged.test_plugin_dir)?);
    dtors::check(&libs)
}

/// Every example of `examples/` runs and exits as documented (they check
/// their own results; `leak_report` leaks on purpose and exits 1).
fn run_examples() -> Result<()> {
    for (example, expected) in [
        ("vec_add", 0),
        ("multi_device_threads", 0),
        ("async_pipeline", 0),
        ("queue_pipeline", 0),
        ("leak_report", 1),
    ] {
        let mut cmd = cmd::cargo();
        cmd.args(["run", "-q", "--example", example]);
        println!("$ {}", cmd::show(&cmd));
        let status = cmd.status().context("running cargo run --example")?;
        if status.code() != Some(expected) {
            bail!("example {example} exited with {status}, expected {expected}");
        }
    }
    Ok(())
}

/// Every benchmark runs once so that none rots; none asserts a time. The
/// criterion benches run in criterion's test mode (`cargo test --benches`:
/// each benchmark once), the LLVM comparison and the remote-device
/// benchmark with `--quick` (one short run on the staged debug libraries;
/// their programs check their results).
fn benchmarks_once() -> Result<()> {
    let mut cmd = cmd::cargo();
    cmd.args([
        "test",
        "-p",
        "omptarget",
        // Each bench target, not `--benches`: that also takes the library's
        // own unit tests (its `bench = true`), which the workspace step ran.
        "--bench",
        "*",
        "--features",
        "internals",
    ]);
    println!("$ {}", cmd::show(&cmd));
    if !cmd
        .status()
        .context("running cargo test --benches")?
        .success()
    {
        bail!("a criterion benchmark failed in test mode");
    }
    // One after the other, not at once: quick mode asserts no time, but
    // it prints its ratios, and two benchmarks sharing the cores print
    // ratios that mean nothing (the MPI region at 10x a ping-pong).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for script in [
        "benches/llvm_comparison/compare.py",
        "benches/mpi_remote/run.py",
        "benches/liboffload/run.py",
    ] {
        cmd::run(
            std::process::Command::new("python3")
                .arg(root.join(script))
                .arg("--quick"),
        )?;
    }
    Ok(())
}

/// The code-layout lists (`*/text-order.txt`, read by the release link)
/// still name at least 90% of the functions of a release build: names
/// carry hashes that change with the code, so a list decays silently
/// unless something counts (`scripts/text-order.py` rewrites them).
fn text_order_check() -> Result<()> {
    let root = stage::workspace_root();
    cmd::run(
        std::process::Command::new("python3")
            .current_dir(&root)
            .arg(root.join("scripts/text-order.py"))
            .arg("--check")
            .arg("--lib")
            .arg(release_lib_dir()),
    )
}

/// LLVM's own offload lit suites of 14, 19 and 22, each run on the
/// release's runtime and on ours (the staged debug build) in one go, ours
/// in both link forms (the binaries linked as the release links them, and
/// against our library's own name): a test that passes there and not here
/// fails the step, unless
/// `tests/lit/known-regressions.txt` lists it (the list of what issue 19
/// still has to fix; it may only shrink).
fn llvm_lit_suites() -> Result<()> {
    let root = stage::workspace_root();
    // This very program is the suites' caching compiler (`xtask lit-cc`).
    let xtask = std::env::current_exe().context("finding the xtask binary")?;
    cmd::run(
        std::process::Command::new("python3")
            .current_dir(&root)
            .env("OMPTARGET_XTASK", xtask)
            .arg(root.join("scripts/llvm-lit.py"))
            .arg("--known")
            .arg(root.join("tests/lit/known-regressions.txt")),
    )
}

/// The Rust API's integration tests under valgrind: no definite or indirect
/// leak, no memory error. `runtime_api` drives plugin libraries through the
/// typed API; `api` and `instances` (crate `tests/rust_user`) are the
/// user's view, with the built-in host plugin.
fn valgrind_rust_api() -> Result<()> {
    // Memcheck runs a program on one core: the three at once.
    let runs = ["runtime_api", "api", "instances"]
        .into_iter()
        .map(|test| valgrind::command(test, &[]))
        .collect::<Result<Vec<_>>>()?;
    cmd::run_together(runs)
}

#[cfg(test)]
mod tests {
    use super::{binary_name, count, nextest_version};

    #[test]
    fn nextest_versions_compare_as_numbers() {
        let v = nextest_version("cargo-nextest 0.9.143 (60fa45f63 2026-08-04)\nrelease: 0.9.143");
        assert_eq!(v, Some((0, 9, 143)));
        assert!(v.unwrap() >= super::NEXTEST_MIN);
        assert!(nextest_version("cargo-nextest 0.9.9").unwrap() < super::NEXTEST_MIN);
        assert_eq!(nextest_version("error: no such command"), None);
    }

    #[test]
    fn binaries_are_named_by_crate() {
        assert_eq!(
            binary_name("unittests src/lib.rs (target/debug/deps/omptarget_abi-1a2b3c)"),
            "omptarget_abi unittests src/lib.rs"
        );
        assert_eq!(
            binary_name("tests/abi_layout.rs (target/debug/deps/abi_layout-ffee)"),
            "abi_layout tests/abi_layout.rs"
        );
    }

    #[test]
    fn counts_come_from_nextests_summary_line() {
        let l = "Summary [ 300.120s] 450 tests run: 446 passed (3 slow), 2 failed, 1 timed out, 5 skipped";
        assert_eq!(count(l, " passed"), 446);
        assert_eq!(count(l, " failed"), 2);
        assert_eq!(count(l, " timed out"), 1);
        assert_eq!(count(l, " skipped"), 5);
        let l = "Summary [ 1.0s] 9 tests run: 6 passed, 1 exec failed, 2 failed, 0 skipped";
        assert_eq!(count(l, " exec failed"), 1);
        assert_eq!(count(l, " failed"), 2);
        let l = "Summary [  90.002s] 4 tests run: 4 passed, 19 skipped";
        assert_eq!(count(l, " passed"), 4);
        assert_eq!(count(l, " failed"), 0);
    }

    /// `scripts/text-order.py` names the libraries whose code layout it
    /// checks (`LIBRARIES`: staged name, crate folder); the release copy
    /// must hold each of them ([`super::RELEASE_CHECKED`]), or the check
    /// reads a library that was not built.
    #[test]
    fn the_release_copy_holds_the_libraries_whose_code_layout_is_checked() {
        use std::collections::BTreeSet;
        let root = crate::stage::workspace_root();
        let script = std::fs::read_to_string(root.join("scripts/text-order.py")).unwrap();
        let block = script
            .split("LIBRARIES = (")
            .nth(1)
            .and_then(|rest| rest.split("\n)").next())
            .expect("text-order.py's LIBRARIES");
        let listed: BTreeSet<(String, String)> = block
            .lines()
            .filter(|l| l.trim_start().starts_with("(\""))
            .map(|l| {
                // ("NAME", os.path.join("A", "B", ...)),
                let quoted: Vec<&str> = l.split('"').skip(1).step_by(2).collect();
                (quoted[0].to_string(), quoted[1..].join("/"))
            })
            .collect();
        assert!(!listed.is_empty(), "no library read from LIBRARIES");
        let packages = crate::layers::packages();
        let built: BTreeSet<(String, String)> = super::RELEASE_CHECKED
            .iter()
            .map(|package| {
                let (_, _, name, _) = crate::stage::ARTIFACTS
                    .iter()
                    .find(|a| a.0 == *package)
                    .unwrap_or_else(|| panic!("{package} stages no library"));
                (name.to_string(), packages[*package].0.clone())
            })
            .collect();
        let missing: Vec<_> = listed.difference(&built).collect();
        assert!(missing.is_empty(), "not in the release copy: {missing:?}");
    }

    /// The tests read the release copy's folder from the variable this
    /// step sets.
    #[test]
    fn the_valgrind_folder_is_passed_under_the_name_the_tests_read() {
        assert_eq!(
            super::VALGRIND_LIB_ENV,
            omptarget_test_support::valgrind::LIB_DIR_ENV
        );
    }

    #[test]
    fn counts_come_from_the_summary_line() {
        let l = "test result: ok. 16 passed; 2 failed; 3 ignored; 0 measured; 0 filtered out";
        assert_eq!(count(l, " passed"), 16);
        assert_eq!(count(l, " failed"), 2);
        assert_eq!(count(l, " ignored"), 3);
    }
}
