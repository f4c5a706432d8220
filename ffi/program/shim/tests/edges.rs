//! Lifecycle edges: programs that leave the runtime in ways it does not
//! control (exit, siglongjmp, pthread_exit or cancellation inside a
//! kernel; main returning under a running kernel; fork under a busy
//! thread), API calls racing the last dlclose or an image load, and an
//! unusable `TMPDIR`. Each is a clang-14 program of
//! `ffi/program/shim/tests/c/edge_*.c`, run as its own process through the staged
//! shim with a timeout, so a hang fails the test instead of the suite.
//!
//! Written ahead of the runtime's fix: the doc comment of each test says
//! how the runtime of commit df6a016 failed it, measured on a 2-core
//! machine with the commands in the comment (`rate` = failed runs / runs).

use omptarget_test_support::{
    clang::clang, clang::link_shim, clang::OFFLOAD, valgrind, Outcome, Run, Scratch, TestPlugin,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Hang detection only, never a time window: a normal run of these
/// programs takes well under a second, and even on a 2-core machine loaded
/// by the rest of the suite (valgrind runs beside it) a few seconds; 60 s
/// sits far above that. No test asserts how fast a run was.
const HANG_LIMIT: Duration = omptarget_test_support::run::RUN_TIMEOUT;

/// Build `source` (a file of `ffi/program/shim/tests/c/`) as an offload program
/// for the host device, with pthreads.
fn build(scratch: &Scratch, source: &str) -> PathBuf {
    let program = scratch.join(source.trim_end_matches(".c"));
    let mut flags = OFFLOAD.to_vec();
    flags.push("-pthread");
    clang(&[source], &program, &flags, &["-ldl"]);
    program
}

/// Build `offload_sum_lib.c` as the offload library the dlopen tests load.
fn build_offload_lib(scratch: &Scratch) -> PathBuf {
    let lib = scratch.join("liboffload_sum.so");
    let mut flags = OFFLOAD.to_vec();
    flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &flags, &[]);
    lib
}

/// Build `source` as a program without offload code of its own, linked
/// against the staged shim (and libomp, libdl), for the dlopen tests.
fn build_host_only(scratch: &Scratch, source: &str) -> PathBuf {
    let program = scratch.join(source.trim_end_matches(".c"));
    let mut libs = link_shim();
    libs.extend(["-fopenmp".to_owned(), "-ldl".to_owned()]);
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(&[source], &program, &["-fopenmp", "-pthread"], &libs);
    program
}

/// The program ended by `exit(code)` (not a signal, not another code).
fn assert_code(out: &Outcome, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected status {code}:\n{out}"
    );
}

/// Run `program` `runs` times; panic with the first run for which `ok`
/// is false (and how many failed), saying what each run should have done.
fn every_run(
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
fn assert_no_heap_or_plugin_trouble(out: &Outcome) {
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

/// `exit(7)` inside a target region on the host device (the kernel runs in
/// the program's process, inside the runtime's launch): status 7 at once.
///
/// Before the fix: passes (5/5 runs); the region maps nothing.
#[test]
fn exit_inside_a_target_region_ends_the_program_with_its_status() {
    let scratch = Scratch::new("edge-exit-kernel");
    let program = build(&scratch, "edge_exit_in_kernel.c");
    let out = Run::new(&scratch, &program).timeout(HANG_LIMIT).run();
    assert_code(&out, 7);
    assert_eq!(out.value("before"), "42", "{out}");
    assert!(!out.stdout.contains("after="), "{out}");
}

/// The same, in a region that maps an array: status 7 at once.
///
/// Before the fix: hangs forever (rate 3/3 and 5/5). The exit handlers run
/// on the thread that is still inside `__tgt_rtl_run_target_region`: the
/// shim's `omptarget_safety_net` (a `.fini_array` entry, from `_dl_fini`)
/// shuts the runtime down and `__tgt_rtl_deinit_plugin` waits for the
/// write lock of the host plugin's `RwLock<Lifecycle>`, of which this same
/// thread holds a read guard for the launch:
/// `exit -> _dl_fini -> omptarget_safety_net -> Session::shutdown ->
/// Runtime::teardown -> Plugin::deinit -> PluginCell::deinit ->
/// RwLock::write_contended` (futex wait, forever).
#[test]
fn exit_inside_a_mapping_target_region_ends_the_program_with_its_status() {
    let scratch = Scratch::new("edge-exit-kernel-mapped");
    let program = build(&scratch, "edge_exit_in_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("mapped")
        .timeout(HANG_LIMIT)
        .run();
    assert_code(&out, 7);
    assert_eq!(out.value("before"), "42", "{out}");
    assert!(!out.stdout.contains("after="), "{out}");
}

/// The kernel raises SIGUSR1; the host's handler siglongjmps out of the
/// region (and out of the runtime's launch) back to main, which offloads
/// again and exits with status 5.
///
/// Before the fix: passes (5/5 runs); the region left maps nothing.
#[test]
fn siglongjmp_out_of_a_target_region_then_offload_again() {
    let scratch = Scratch::new("edge-longjmp");
    let program = build(&scratch, "edge_longjmp_from_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("again")
        .timeout(HANG_LIMIT)
        .run();
    assert_code(&out, 5);
    assert_eq!(out.value("before"), "42", "{out}");
    assert_eq!(out.value("jumped"), "1", "{out}");
    assert_eq!(out.value("again"), "43,32640", "{out}");
    assert!(!out.stdout.contains("returned="), "{out}");
}

/// The same when the region left maps an array (which stays mapped: its
/// region never ended): the later region still runs (mapping the same
/// array) and the program exits with status 5, also without the second
/// region.
///
/// Before the fix: both runs print everything, then hang at exit forever
/// (rate 3/3 each): the launch's read guard of the host plugin's lifecycle
/// lock is never dropped (the frame holding it was jumped over), so the
/// teardown at exit waits for the write lock forever, as in
/// `exit_inside_a_mapping_target_region_ends_the_program_with_its_status`.
#[test]
fn siglongjmp_out_of_a_mapping_target_region_then_offload_again() {
    let scratch = Scratch::new("edge-longjmp-mapped");
    let program = build(&scratch, "edge_longjmp_from_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("mapped")
        .arg("again")
        .timeout(HANG_LIMIT)
        .run();
    assert_code(&out, 5);
    assert_eq!(out.value("jumped"), "1", "{out}");
    assert_eq!(out.value("again"), "43,32640", "{out}");
    let out = Run::new(&scratch, &program)
        .arg("mapped")
        .timeout(HANG_LIMIT)
        .run();
    assert_code(&out, 5);
    assert_eq!(out.value("jumped"), "1", "{out}");
}

/// Run `edge_return_during_kernel.c` (`mapped` or not) with the shutdown
/// report on stderr and check it ended with main's status and reported
/// what it left to the OS. The kernel never ends, so a runtime that waits
/// for it at exit never ends either and fails at the hang limit.
fn main_returns_during_kernel(label: &str, mapped: bool) {
    let scratch = Scratch::new(label);
    let program = build(&scratch, "edge_return_during_kernel.c");
    let mut run = Run::new(&scratch, &program)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1")
        .timeout(HANG_LIMIT);
    if mapped {
        run = run.arg("mapped");
    }
    let out = run.run();
    assert_code(&out, 9);
    assert_eq!(out.value("kernel_started"), "1", "{out}");
    assert!(
        out.stderr.contains("left to the OS"),
        "the report must say what was still in use and left to the OS:\n{out}"
    );
    // The image stays loaded: its destructors never ran, and it says so.
    assert!(
        out.stderr
            .contains("): destructors NOT run: in use at exit: "),
        "{out}"
    );
}

/// `main` returns (status 9) while another pthread is inside a kernel
/// that never ends and maps nothing: the process exits with status 9, and
/// the shutdown report says what was left to the OS.
///
/// Before the fix: never ends (rate 5/5; killed at the timeout). The
/// executable's `__tgt_unregister_lib` (from `_dl_fini`) waits in
/// `lifecycle::shut_down -> wait_for_readers` (a `sched_yield` loop, no
/// bound) for the kernel's thread to leave the runtime, which (then a
/// 30 s kernel) took the kernel's whole run.
#[test]
fn main_returns_while_a_long_kernel_runs_on_another_thread() {
    main_returns_during_kernel("edge-return-kernel", false);
}

/// The same with the kernel's region mapping an array (`tofrom`).
///
/// Before the fix: status 9, but only after the 5 s bounded wait at exit
/// (rate 5/5 over the 4 s limit), printing "offload calls still running
/// on other threads at exit; the runtime is not shut down" and no report.
#[test]
fn main_returns_while_a_long_mapping_kernel_runs_on_another_thread() {
    main_returns_during_kernel("edge-return-kernel-mapped", true);
}

/// `exit(3)` from the main thread while 4 other threads offload in a loop
/// (mapped data, results checked): status 3 in each of 20 runs.
///
/// Before the fix: most runs abort (status 134) with "Libomptarget error:
/// Host ptr 0x... does not have a matching target pointer." then a fatal
/// error (the exit's teardown removes mappings under a worker's region):
/// rate 18/20 (standalone loop of 20), 20/20 through this test. With the
/// lifecycle state machine alone, about 1 run in 100 still aborted (134,
/// "Copying data from device failed" or "getTargetPointer returned null"):
/// the exit finalized the plugin under a worker's region, and the worker's
/// error path aborted; workers now park when their call fails after the
/// close (this test failed in 2 of 11 runs of the edges suite before).
#[test]
fn exit_from_one_thread_while_four_threads_offload() {
    let scratch = Scratch::new("edge-exit-busy");
    let program = build(&scratch, "edge_exit_while_offloading.c");
    every_run(&scratch, &program, 20, "exit with status 3", |out| {
        out.status.code() == Some(3) && out.value("workers_running") == "1"
    });
}

/// `exit(4)` inside a `single` with 64 deferred `target nowait` tasks and
/// a `target enter data nowait` not yet run: status 4, promptly, in each
/// of 10 runs.
///
/// Before the fix: every run hung until killed (10 of 10 at the 60 s
/// limit). libomp's finaliser, run by the exit, waits for the tasks held
/// by its workers, and each worker's call parked because the exit had
/// closed the runtime; such calls now return at once (the region falls
/// back to the host).
#[test]
fn exit_with_pending_target_nowait_tasks() {
    let scratch = Scratch::new("edge-exit-pending-tasks");
    let program = build(&scratch, "edge_exit_with_pending_tasks.c");
    for run in 0..10 {
        let out = Run::new(&scratch, &program).timeout(HANG_LIMIT).run();
        assert_eq!(out.status.code(), Some(4), "run {run}:\n{out}");
        assert_eq!(out.value("tasks_created"), "64", "run {run}:\n{out}");
        assert_no_heap_or_plugin_trouble(&out);
    }
}

/// `exit(5)` inside a `single` while `target nowait` kernels run on the
/// host devices (64 deferred regions of 0.2 s, the exit once the first has
/// started): status 5, within the time the running kernels need, in each
/// of 20 runs.
///
/// Before the fix: about 1 run in 6 hung for ever. A hidden helper thread
/// whose kernel returned after the exit closed the runtime failed its
/// copy back and parked, and libomp's finaliser, run by the exit, waits
/// for the hidden helper team. Such a deferred call now ends quietly.
#[test]
fn exit_while_target_nowait_kernels_run() {
    let scratch = Scratch::new("edge-exit-kernels-run");
    let program = build(&scratch, "edge_exit_while_kernels_run.c");
    every_run(&scratch, &program, 20, "exit with status 5", |out| {
        out.status.code() == Some(5) && out.value("tasks_created") == "64"
    });
}

/// `exit(7)` inside one of 16 `target nowait` kernels, while the others
/// run: status 7 in each of 20 runs, stdout flushed, nothing after the
/// `taskwait` run, and one line on stderr that says the exit handlers
/// were skipped. The kernel runs on a libomp hidden helper thread, where
/// libomp's finaliser (an exit handler) waits for that thread's own team.
///
/// Before the fix: hung for ever in every run (5 of 5), as it does on
/// plain libomp without any offload runtime; LLVM 14, 19 and 22's
/// runtimes end it with SIGSEGV.
#[test]
fn exit_inside_a_target_nowait_kernel() {
    let scratch = Scratch::new("edge-exit-nowait-kernel");
    let program = build(&scratch, "edge_exit_in_nowait_kernel.c");
    every_run(
        &scratch,
        &program,
        20,
        "exit with status 7 as said",
        |out| {
            out.status.code() == Some(7)
                && out.stdout.contains("before=1")
                && !out.stdout.contains("after_taskwait")
                && out
                    .stderr
                    .contains("omptarget: exit(7) called in a target nowait region")
        },
    );
}

/// With libomp's hidden helper threads turned off, the same kernel runs
/// on a thread of the program's team, where `exit` is the C library's own:
/// status 7, and no line about skipped handlers.
#[test]
fn exit_inside_a_target_nowait_kernel_without_hidden_helpers() {
    let scratch = Scratch::new("edge-exit-nowait-kernel-no-helpers");
    let program = build(&scratch, "edge_exit_in_nowait_kernel.c");
    let out = Run::new(&scratch, &program)
        .env("LIBOMP_USE_HIDDEN_HELPER_TASK", "false")
        .timeout(HANG_LIMIT)
        .run();
    assert_code(&out, 7);
    assert!(!out.stderr.contains("omptarget: exit("), "{out}");
    assert!(!out.stdout.contains("after_taskwait"), "{out}");
}

/// `interop init(targetsync: obj) depend(inout: A)`, then a `target
/// depend(inout: A) nowait`, and main returns 5 with the target task
/// possibly still pending: status 5, promptly, in each of 10 runs (the
/// issue saw our runtime hang in libomp's finaliser; a target task that
/// starts after the exit closed the runtime now falls back instead of
/// parking).
#[test]
fn return_with_an_interop_ordered_target_task_pending() {
    let scratch = Scratch::new("edge-interop-pending");
    let program = build(&scratch, "edge_interop_pending_at_exit.c");
    for run in 0..10 {
        let out = Run::new(&scratch, &program).timeout(HANG_LIMIT).run();
        assert_eq!(out.status.code(), Some(5), "run {run}:\n{out}");
        assert_no_heap_or_plugin_trouble(&out);
    }
}

/// Run `edge_fork_while_offloading.c` (`plugin`: the test plugin, or the
/// discovered host plugin) and check every child and the parent. The
/// program kills a child still alive after [`CHILD_HANG_LIMIT_S`] (status
/// 137): hang detection, far above a child's normal lifetime (tens of
/// milliseconds; a few seconds under valgrind).
fn fork_while_offloading(label: &str, plugin: bool) {
    let scratch = Scratch::new(label);
    let program = build(&scratch, "edge_fork_while_offloading.c");
    let mut run = Run::new(&scratch, &program)
        .arg(CHILD_HANG_LIMIT_S.to_string())
        .timeout(HANG_LIMIT * 4);
    if plugin {
        let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
        run = run.plugin(&plugin);
    }
    let out = run.run();
    out.assert_success();
    assert_eq!(
        out.value("child_status"),
        "0",
        "a child failed (137: killed, hung for {CHILD_HANG_LIMIT_S} s)\n{out}"
    );
    assert_eq!(out.value("parent_regions_ok"), "1", "{out}");
    let children = out.stdout.matches("child_wrong=").count();
    assert_eq!(children, 3, "every child prints its result\n{out}");
    assert_eq!(out.stdout.matches("child_wrong=0").count(), 3, "{out}");
    assert_no_heap_or_plugin_trouble(&out);
}

/// The hang limit of a forked child (seconds), passed to the program.
const CHILD_HANG_LIMIT_S: u32 = 60;

/// `fork()` while another thread offloads on device 0 in a loop; the child
/// runs 200 regions (results checked) and exits 0; 3 forks.
/// Discovered host plugin.
///
/// Before the fix: rate 5/5: 4 runs with a child hung forever (killed by
/// the parent after 6 s), 1 with a child that lived 5.05 s (the exit's
/// bounded wait for the busy thread's inherited reader count: "offload
/// calls still running on other threads at exit"). The hung child waits
/// on the device's mapping table mutex that the parent's busy thread held
/// at the fork: `child -> __tgt_target_mapper -> Offload::run_target ->
/// process_data_before -> data_begin -> MappingTable::get_target_pointer
/// -> lock_entries -> Mutex::lock_contended` (futex wait, forever).
#[test]
fn fork_while_offloading_then_offload_in_the_child_on_the_host_plugin() {
    fork_while_offloading("edge-fork-host", false);
}

/// The same on a two-device test plugin.
///
/// Before the fix: see the host-plugin variant; rate below in the report.
#[test]
fn fork_while_offloading_then_offload_in_the_child_on_the_test_plugin() {
    fork_while_offloading("edge-fork-plugin", true);
}

/// Build `edge_memcpy_during_dlopen.c` and the offload library, and run it.
fn memcpy_during_dlopen(scratch: &Scratch, plugin: Option<&TestPlugin>) -> Outcome {
    let lib = build_offload_lib(scratch);
    let program = build_host_only(scratch, "edge_memcpy_during_dlopen.c");
    let mut run = Run::new(scratch, &program).arg(&lib).timeout(HANG_LIMIT);
    if let Some(plugin) = plugin {
        run = run.plugin(plugin);
    }
    let out = run.run();
    out.assert_success();
    assert_eq!(out.value("cycles"), "300", "{out}");
    assert_eq!(out.value("wrong"), "0", "{out}");
    assert_eq!(out.value("copy_wrong"), "0", "{out}");
    assert_ne!(out.value("copies"), "0", "{out}");
    assert_eq!(out.value("alloc_failed"), "0", "{out}");
    assert_no_heap_or_plugin_trouble(&out);
    out
}

/// One thread loops on `omp_target_alloc` / `omp_target_memcpy` both ways
/// (checked) / `omp_target_free` on device 0 while the main thread
/// dlopens, calls and dlcloses the only offload library 300 times, on a
/// one-device test plugin: exit 0, every result right, the library's 300
/// regions ran on the plugin, every block freed exactly once.
///
/// Before the fix: see the report for the rate; failures are aborts
/// (134) with "omp_target_memcpy returns OFFLOAD_FAIL", "omp_target_free:
/// device 0 did not free ..." and "double free or corruption".
#[test]
fn memcpy_during_dlopen_and_dlclose_on_the_test_plugin() {
    let scratch = Scratch::new("edge-memcpy-dlopen");
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let out = memcpy_during_dlopen(&scratch, Some(&plugin));
    assert_eq!(out.stderr, "", "{out}");
    let log = plugin.log();
    assert_eq!(log.calls_starting("run_target").len(), 300, "{log}");
    log.assert_every_alloc_freed_once();
}

/// The same on the discovered host plugin: exit 0, results right.
///
/// Before the fix: aborts (134) in 5/5 runs, with "omp_target_memcpy
/// returns OFFLOAD_FAIL" (3/5) or "omp_target_free: device 0 did not free
/// ..." (2/5, once followed by "double free or corruption (fasttop)").
#[test]
fn memcpy_during_dlopen_and_dlclose_on_the_host_plugin() {
    let scratch = Scratch::new("edge-memcpy-dlopen-host");
    let out = memcpy_during_dlopen(&scratch, None);
    assert_eq!(out.stderr, "", "{out}");
}

/// Build `edge_api_after_dlclose.c` and its offload library.
fn api_after_dlclose_build(scratch: &Scratch) -> (PathBuf, PathBuf) {
    let lib = build_offload_lib(scratch);
    let program = build_host_only(scratch, "edge_api_after_dlclose.c");
    (program, lib)
}

/// What `edge_api_after_dlclose.c` must print in mode `noblock` or not.
fn assert_api_after_dlclose(out: &Outcome, noblock: bool) {
    assert_eq!(out.value("devices_before"), "4", "{out}");
    assert_eq!(out.value("sum"), "55", "{out}");
    assert_eq!(
        out.value("devices_after"),
        "4",
        "the devices are still there after the last dlclose\n{out}"
    );
    if noblock {
        assert_eq!(out.value("roundtrip_after"), "0", "{out}");
    } else {
        assert_eq!(out.value("allocated"), "1", "{out}");
        assert_eq!(out.value("memcpy_after"), "0", "{out}");
    }
    assert_eq!(out.value("freed"), "1", "{out}");
}

/// A program without offload code dlopens the only offload library, runs
/// its region, takes a block with `omp_target_alloc(64, 0)`, dlcloses the
/// library; then `omp_get_num_devices()` still says 4 (host plugin), the
/// block still holds its data, and `omp_target_free` of it is silent.
///
/// Before the fix: passes (3/3): the live block keeps the runtime up
/// past the dlclose.
#[test]
fn api_calls_on_a_block_kept_across_the_last_dlclose() {
    let scratch = Scratch::new("edge-api-after-dlclose");
    let (program, lib) = api_after_dlclose_build(&scratch);
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_api_after_dlclose(&out, false);
    assert_eq!(out.stderr, "", "{out}");
}

/// The same without a block held across the dlclose: afterwards
/// `omp_get_num_devices()` still says 4, and a new block can be
/// allocated, copied to and from, and freed, silently.
///
/// Before the fix: fails (3/3): the dlclose shut the runtime down and it
/// does not come back for the API: `devices_after=0`, the round trip fails
/// ("omp_target_memcpy returns OFFLOAD_FAIL").
#[test]
fn api_calls_after_the_last_dlclose_still_see_the_devices() {
    let scratch = Scratch::new("edge-api-after-dlclose-noblock");
    let (program, lib) = api_after_dlclose_build(&scratch);
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .arg("noblock")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_api_after_dlclose(&out, true);
    assert_eq!(out.stderr, "", "{out}");
}

/// Valgrind's summary lines must show no error and nothing definitely or
/// indirectly lost.
fn assert_valgrind_clean(out: &Outcome) {
    assert!(
        out.stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors:\n{out}"
    );
    for kind in ["definitely lost: ", "indirectly lost: "] {
        for line in out.stderr.lines().filter(|l| l.contains(kind)) {
            assert!(line.contains(&format!("{kind}0 bytes")), "{line}\n{out}");
        }
    }
}

/// One variant of the API-after-dlclose program under valgrind's
/// memcheck: right results, 0 errors, nothing definitely or indirectly
/// lost, nothing on stderr from the runtime. Hang limit: 20 times its
/// measured cost alone (~3 s).
///
/// Before the fix: valgrind is clean in both modes (0 errors, 0 bytes
/// lost), but the `noblock` run prints `devices_after=0` and fails as in
/// `api_calls_after_the_last_dlclose_still_see_the_devices`.
fn api_after_dlclose_under_valgrind(label: &str, noblock: bool) {
    let scratch = Scratch::new(label);
    let (program, lib) = api_after_dlclose_build(&scratch);
    let mut run = Run::new(&scratch, Path::new("valgrind"))
        .arg("--leak-check=full")
        .arg("--error-exitcode=99")
        .arg("--errors-for-leak-kinds=definite,indirect")
        .arg("--fair-sched=yes")
        .arg(&program)
        .arg(&lib)
        .timeout(Duration::from_secs(3 * u64::from(VALGRIND_LIMIT_FACTOR)).max(HANG_LIMIT));
    if noblock {
        run = run.arg("noblock");
    }
    let out = run.run();
    assert_code(&out, 0);
    assert_valgrind_clean(&out);
    assert_api_after_dlclose(&out, noblock);
    assert!(!out.stderr.contains("Libomptarget"), "{out}");
}

#[test]
fn api_calls_on_a_block_kept_across_the_last_dlclose_are_clean_under_valgrind() {
    api_after_dlclose_under_valgrind("edge-api-after-dlclose-valgrind", false);
}

#[test]
fn api_calls_after_the_last_dlclose_are_clean_under_valgrind() {
    api_after_dlclose_under_valgrind("edge-api-after-dlclose-noblock-valgrind", true);
}

/// A thread runs the program's own target regions on 8 host devices in
/// turn (each library registration makes its next region on every device
/// load the new image: the host plugin dlopens it) while the main thread
/// dlopens the offload library (its constructor registers under the
/// dynamic loader's lock), runs its region on device (cycle % 8) and
/// dlcloses it, 150 times: no deadlock, every result right.
///
/// Before the fix: deadlocks in 5/5 runs (killed at 30 s) and on the first
/// attempt under gdb: a lock-order inversion between the runtime's
/// registry lock and the loader's lock. Thread A: `own_offloads ->
/// Offload::target -> check_device_and_ctors -> init_library ->
/// load_images -> __tgt_rtl_load_binary -> LoadedImage::load -> dlopen ->
/// _dl_open -> pthread_mutex_lock(_rtld_global dl_load_lock)`, holding
/// the registry tables; main: `dlclose -> _dl_close_worker ->
/// _dl_call_fini -> __tgt_unregister_lib -> Offload::unregister_lib ->
/// Registry::registered_libs -> lock_tables` (holding the loader lock).
/// Again 4/5 (timeout 30 s) just before the fix.
///
/// The fix: no lock of ours is held across `load_binary`/`unload_binary`
/// (`omptarget_openmp`'s `load` module; the plugin's image lock is gone),
/// so a thread waiting for the loader's lock holds none of ours.
#[test]
fn library_registration_during_an_image_load_does_not_deadlock() {
    let scratch = Scratch::new("edge-register-during-load");
    let lib = build_offload_lib(&scratch);
    let program = build(&scratch, "edge_register_during_load.c");
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .env("OMPTARGET_HOST_DEVICES", "8")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), "8", "{out}");
    assert_eq!(out.value("cycles"), "150", "{out}");
    assert_eq!(out.value("lib_wrong"), "0", "{out}");
    assert_eq!(out.value("own_wrong"), "0", "{out}");
    assert_ne!(out.value("own_regions"), "0", "{out}");
    assert_eq!(out.stderr, "", "{out}");
}

/// A thread's kernel (in a region mapping an array) calls
/// `pthread_exit((void *)42)`: the join gets 42, the program maps the
/// same array in a new region on the same device, gets its result, and
/// exits 0.
///
/// Before the fix: aborts (134) with "FATAL: exception not rethrown" (3/3):
/// glibc's forced unwind of pthread_exit is caught by a `catch_unwind` of
/// the runtime (the plugin's entry guard or the shim's boundary) and not
/// resumed.
#[test]
fn pthread_exit_inside_a_kernel_then_offload_again() {
    let scratch = Scratch::new("edge-pthread-exit");
    let program = build(&scratch, "edge_thread_ends_in_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("exit")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("joined"), "42", "{out}");
    assert_eq!(out.value("again"), "32640", "{out}");
}

/// A thread's kernel loops on `usleep` + `pthread_testcancel`; the main
/// thread cancels it: the join gets `PTHREAD_CANCELED`, the program
/// offloads again (same array, same device) and exits 0.
///
/// Before the fix: aborts (134) with "FATAL: exception not rethrown"
/// (3/3), as for `pthread_exit`.
#[test]
fn pthread_cancel_inside_a_kernel_then_offload_again() {
    let scratch = Scratch::new("edge-pthread-cancel");
    let program = build(&scratch, "edge_thread_ends_in_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("cancel")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("joined"), "canceled", "{out}");
    assert_eq!(out.value("again"), "32640", "{out}");
}

/// `TMPDIR=/nonexistent/dir`: a plain offload program on the host plugin
/// still runs on every device with right results.
///
/// Before the fix: aborts (134) (3/3): the host plugin writes each image
/// to a file in the temp dir to dlopen it ("cannot create an image file
/// in /nonexistent/dir"), so no image loads and the mandatory offload is
/// fatal.
#[test]
fn an_unusable_tmpdir_does_not_stop_offloading() {
    let scratch = Scratch::new("edge-tmpdir");
    let program = build(&scratch, "edge_plain_offload.c");
    let out = Run::new(&scratch, &program)
        .env("TMPDIR", "/nonexistent/dir")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), "4", "{out}");
    assert_eq!(out.value("sum"), "130560", "{out}");
    assert_eq!(out.value("result"), "ok", "{out}");
    assert_eq!(out.stderr, "", "{out}");
}

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
const VALGRIND_LIMIT_FACTOR: u32 = 20;

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
