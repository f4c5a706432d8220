//! exit, siglongjmp and a returning main while kernels run: the program ends with its status, or offloads again.

use super::*;

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
