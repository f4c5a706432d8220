//! Lifecycle edges: programs that leave the runtime in ways it does not
//! control (exit, siglongjmp, pthread_exit or cancellation inside a
//! kernel; main returning under a running kernel; fork under a busy
//! thread), API calls racing the last dlclose or an image load, and an
//! unusable `TMPDIR`. Each is a clang-14 program of
//! `ffi/program/shim/tests/c/edge_*.c`, run as its own process through the staged
//! shim (under valgrind: through the release copy when `cargo xtask test`
//! names it, `under_valgrind::valgrind_libs`) with a timeout, so a hang
//! fails the test instead of the suite.
//!
//! Written ahead of the runtime's fix: the doc comment of each test says
//! how the runtime of commit df6a016 failed it, measured on a 2-core
//! machine with the commands in the comment (`rate` = failed runs / runs).
//!
//! One test binary, a module per topic; the helpers every topic uses are
//! here.

#![allow(unused_imports)] // each topic uses part of the shared imports

mod dlclose;
mod exit;
mod fork;
mod loading;
mod under_valgrind;

use omptarget_test_support::{
    clang::clang, clang::link_shim, clang::OFFLOAD, valgrind, Outcome, Run, Scratch, TestPlugin,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Hang detection only, never a time window: a normal run of these
/// programs takes well under a second, and even on a 2-core machine loaded
/// by the rest of the suite (valgrind runs beside it) a few seconds; 60 s
/// sits far above that. No test asserts how fast a run was.
pub(crate) const HANG_LIMIT: Duration = omptarget_test_support::run::RUN_TIMEOUT;

/// Build `source` (a file of `ffi/program/shim/tests/c/`) as an offload program
/// for the host device, with pthreads.
pub(crate) fn build(scratch: &Scratch, source: &str) -> PathBuf {
    let program = scratch.join(source.trim_end_matches(".c"));
    let mut flags = OFFLOAD.to_vec();
    flags.push("-pthread");
    clang(&[source], &program, &flags, &["-ldl"]);
    program
}

/// Build `offload_sum_lib.c` as the offload library the dlopen tests load.
pub(crate) fn build_offload_lib(scratch: &Scratch) -> PathBuf {
    let lib = scratch.join("liboffload_sum.so");
    let mut flags = OFFLOAD.to_vec();
    flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &flags, &[]);
    lib
}

/// Build `source` as a program without offload code of its own, linked
/// against the staged shim (and libomp, libdl), for the dlopen tests.
pub(crate) fn build_host_only(scratch: &Scratch, source: &str) -> PathBuf {
    let program = scratch.join(source.trim_end_matches(".c"));
    let mut libs = link_shim();
    libs.extend(["-fopenmp".to_owned(), "-ldl".to_owned()]);
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(&[source], &program, &["-fopenmp", "-pthread"], &libs);
    program
}

/// The program ended by `exit(code)` (not a signal, not another code).
pub(crate) fn assert_code(out: &Outcome, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected status {code}:\n{out}"
    );
}

/// Run `program` `runs` times; panic with the first run for which `ok`
/// is false (and how many failed), saying what each run should have done.
pub(crate) fn every_run(
    scratch: &Scratch,
    program: &Path,
    runs: usize,
    should: &str,
    ok: impl Fn(&Outcome) -> bool,
) {
    let mut failed = Vec::new();
    for _ in 0..runs {
        let out = Run::new(scratch, program).timeout(HANG_LIMIT).run();
        if !ok(&out) {
            failed.push(out);
        }
    }
    if let Some(first) = failed.first() {
        panic!(
            "{} of {runs} runs did not {should}; the first:\n{first}",
            failed.len()
        );
    }
}

/// No line of stderr says the C library found a corrupted heap, and none
/// says the runtime skipped a plugin.
pub(crate) fn assert_no_heap_or_plugin_trouble(out: &Outcome) {
    for bad in [
        "double free or corruption",
        "free(): ",
        "malloc(): ",
        "skipping plugin",
        "already used by another runtime",
    ] {
        assert!(!out.stderr.contains(bad), "stderr says {bad:?}:\n{out}");
    }
}
