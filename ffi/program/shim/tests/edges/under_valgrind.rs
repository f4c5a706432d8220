//! The racing scenarios under valgrind: no error, nothing lost.

use super::fork::CHILD_HANG_LIMIT_S;
use super::*;

/// Our libraries: a leak charged to one of them is ours.
const OURS: &[&str] = &["libomptarget.so", "libomptarget.rtl.x86_64.so"];

/// One edge scenario under valgrind: the program, its arguments and
/// environment, the status it must end with, and what it costs.
struct UnderValgrind<'a> {
    name: &'a str,
    program: &'a Path,
    args: Vec<std::ffi::OsString>,
    env: Vec<(&'a str, &'a str)>,
    status: i32,
    /// Seconds the scenario took alone under valgrind on the 2-core
    /// development machine (2026-12-02); its hang limit is
    /// [`VALGRIND_LIMIT_FACTOR`] times that, at least [`HANG_LIMIT`].
    cost_s: u64,
}

/// A valgrind scenario is killed (and fails) only after this many times
/// its measured cost alone: a 2-core machine running the rest of the suite
/// beside it, or one several times slower, still stays far below.
pub(crate) const VALGRIND_LIMIT_FACTOR: u32 = 20;

/// The runtime these runs check: [`valgrind::our_lib_dir`] (in `cargo
/// xtask test`, the release copy, as `tests/system/valgrind_c.rs` checks
/// it; never another runtime, whose leaks these tests would charge to us).
pub(crate) fn valgrind_libs() -> PathBuf {
    valgrind::our_lib_dir().unwrap_or_else(|e| panic!("no runtime to check under valgrind: {e}"))
}

fn scenario<'a>(
    name: &'a str,
    program: &'a Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    status: i32,
    cost_s: u64,
) -> UnderValgrind<'a> {
    UnderValgrind {
        name,
        program,
        args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
        env: Vec::new(),
        status,
        cost_s,
    }
}

/// Run one edge scenario under memcheck with leak checks, one XML report
/// per process (fork children included): it ends with its status, every
/// process's report is complete, with no memory error, and no block
/// definitely or indirectly lost is charged to our libraries (by its
/// allocation stack). Lost blocks of libomp's are libomp's: a fork child's
/// libomp drops the parent's thread structures, and a thread still in a
/// kernel at exit keeps its libomp descriptor. Teardowns left partial at
/// exit (a thread still in a kernel) leave our blocks reachable from the
/// runtime, which is what "left to the OS" means: not lost. The looping
/// programs run fewer cycles here. `--fair-sched=yes`: valgrind runs one
/// thread at a time, and without it a thread that loops (the edge
/// programs' busy threads) may hold the CPU for long stretches, which made
/// a run's time a matter of luck.
fn check_under_valgrind(scratch: &Scratch, s: UnderValgrind<'_>) {
    let supp = valgrind::suppressions();
    let dir = scratch.join(&format!("vg-{}", s.name));
    std::fs::create_dir_all(&dir).unwrap();
    let limit = Duration::from_secs(s.cost_s * u64::from(VALGRIND_LIMIT_FACTOR)).max(HANG_LIMIT);
    let mut run = Run::new(scratch, Path::new("valgrind"))
        .env("LD_LIBRARY_PATH", valgrind_libs())
        .arg("--leak-check=full")
        .arg("--show-leak-kinds=definite,indirect")
        .arg("--keep-debuginfo=yes")
        .arg("--num-callers=40")
        // A fifth of a run is reading inlining records (valgrind_c.rs).
        .arg("--read-inline-info=no")
        .arg("--fair-sched=yes")
        .arg("--xml=yes")
        .arg(format!("--xml-file={}/%p.xml", dir.display()))
        .arg(format!("--suppressions={}", supp.display()))
        .arg(s.program)
        .timeout(limit);
    for a in &s.args {
        run = run.arg(a);
    }
    for (k, v) in &s.env {
        run = run.env(k, v);
    }
    let out = run.run();
    let mut problems = Vec::new();
    if out.status.code() != Some(s.status) {
        problems.push(format!("expected status {}", s.status));
    }
    let reports: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    if reports.is_empty() {
        problems.push("no valgrind report".into());
    }
    for xml in &reports {
        let report = valgrind::parse(&std::fs::read_to_string(xml).unwrap());
        if !report.finished {
            problems.push(format!("{}: the report is incomplete", xml.display()));
        }
        for e in &report.errors {
            let ours = valgrind::owner(&e.stack)
                .and_then(|o| o.rsplit('/').next())
                .is_some_and(|file| OURS.contains(&file));
            if !e.is_leak() || ours {
                problems.push(format!(
                    "{}: [{}] {}\n{}",
                    xml.display(),
                    e.kind,
                    e.what,
                    e.stack_text()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}: {}\n{out}",
        s.name,
        problems.join("\n")
    );
}

// Every edge scenario that valgrind can run (all but the missing
// `TMPDIR`: valgrind itself needs one), each its own test so that the
// runner spreads them over the cores.

/// One test per line: `test: "name", "source.c", [args], status,
/// cost_s;` runs `source`'s program with `args` under valgrind; it must end
/// with `status`; `cost_s` as in [`UnderValgrind`].
macro_rules! under_valgrind {
    ($($test:ident: $name:literal, $source:literal, [$($arg:expr),*], $status:expr, $cost_s:expr;)*) => {$(
        #[test]
        fn $test() {
            let scratch = Scratch::new(concat!("edge-vg-", $name));
            let program = build(&scratch, $source);
            check_under_valgrind(
                &scratch,
                scenario($name, &program, &[$(&$arg),*], $status, $cost_s),
            );
        }
    )*};
}

under_valgrind! {
    exit_in_kernel_is_clean_under_valgrind: "exit-in-kernel", "edge_exit_in_kernel.c", [], 7, 3;
    exit_in_mapping_kernel_is_clean_under_valgrind: "exit-in-mapping-kernel", "edge_exit_in_kernel.c", ["mapped"], 7, 3;
    longjmp_from_kernel_is_clean_under_valgrind: "longjmp", "edge_longjmp_from_kernel.c", ["mapped", "again"], 5, 3;
    return_during_kernel_is_clean_under_valgrind: "return-during-kernel", "edge_return_during_kernel.c", [], 9, 3;
    return_during_mapping_kernel_is_clean_under_valgrind: "return-during-mapping-kernel", "edge_return_during_kernel.c", ["mapped"], 9, 3;
    exit_while_offloading_is_clean_under_valgrind: "exit-while-offloading", "edge_exit_while_offloading.c", [], 3, 3;
    exit_with_pending_tasks_is_clean_under_valgrind: "exit-pending-tasks", "edge_exit_with_pending_tasks.c", [], 4, 3;
    exit_while_kernels_run_is_clean_under_valgrind: "exit-kernels-run", "edge_exit_while_kernels_run.c", ["0.05"], 5, 3;
    exit_in_nowait_kernel_is_clean_under_valgrind: "exit-nowait-kernel", "edge_exit_in_nowait_kernel.c", ["0.05"], 7, 3;
    interop_pending_at_exit_is_clean_under_valgrind: "interop-pending", "edge_interop_pending_at_exit.c", [], 5, 3;
    pthread_exit_in_kernel_is_clean_under_valgrind: "pthread-exit", "edge_thread_ends_in_kernel.c", ["exit"], 0, 3;
    pthread_cancel_in_kernel_is_clean_under_valgrind: "pthread-cancel", "edge_thread_ends_in_kernel.c", ["cancel"], 0, 3;
    fork_while_offloading_is_clean_under_valgrind: "fork", "edge_fork_while_offloading.c", [CHILD_HANG_LIMIT_S.to_string()], 0, 10;
}

#[test]
fn memcpy_during_dlopen_is_clean_under_valgrind() {
    let scratch = Scratch::new("edge-vg-memcpy-dlopen");
    let lib = build_offload_lib(&scratch);
    let program = build_host_only(&scratch, "edge_memcpy_during_dlopen.c");
    check_under_valgrind(
        &scratch,
        scenario("memcpy-during-dlopen", &program, &[&lib, &"20"], 0, 30),
    );
}

#[test]
fn register_during_load_is_clean_under_valgrind() {
    let scratch = Scratch::new("edge-vg-register-load");
    let lib = build_offload_lib(&scratch);
    let program = build(&scratch, "edge_register_during_load.c");
    check_under_valgrind(
        &scratch,
        UnderValgrind {
            env: vec![("OMPTARGET_HOST_DEVICES", "8")],
            ..scenario("register-during-load", &program, &[&lib, &"10"], 0, 30)
        },
    );
}
