//! `LIBOMPTARGET_DEBUG`: debug lines on stderr that name the plugin and
//! the device; without it (or at 0) a successful run prints nothing.

use omptarget_test_support::{clang::clang, clang::OFFLOAD, Outcome, Run, Scratch, TestPlugin};
use std::path::PathBuf;

const PLUGIN: &str = "libomptarget.rtl.test.so";

/// `dlopen_cycles` and its offload library: one dlopen / call / dlclose,
/// so the runtime is created and shut down while the program runs.
fn build_cycles(scratch: &Scratch) -> (PathBuf, PathBuf) {
    let lib = scratch.join("liboffload_sum.so");
    let mut lib_flags = OFFLOAD.to_vec();
    lib_flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &lib_flags, &[]);
    let program = scratch.join("dlopen_cycles");
    clang(&["dlopen_cycles.c"], &program, &[], &["-ldl"]);
    (program, lib)
}

fn run_cycle(scratch: &Scratch, debug: Option<&str>) -> (Outcome, TestPlugin) {
    let (program, lib) = build_cycles(scratch);
    let plugin = TestPlugin::new(scratch, "plugin", &["devices=1"]);
    let mut run = Run::new(scratch, &program)
        .plugin(&plugin)
        .arg(&lib)
        .arg("1");
    if let Some(level) = debug {
        run = run.env("LIBOMPTARGET_DEBUG", level);
    }
    let out = run.run();
    out.assert_success();
    assert_eq!(out.value("cycle0"), "5050", "{out}");
    (out, plugin)
}

/// The runtime's own debug lines (not the plugin's `... -->` lines).
fn runtime_debug_lines(out: &Outcome) -> Vec<&str> {
    out.stderr
        .lines()
        .filter(|l| l.contains(" DEBUG ") && !l.contains("-->"))
        .collect()
}

#[test]
fn debug_lines_name_the_plugin_and_the_device() {
    let scratch = Scratch::new("debug-on");
    let (out, plugin) = run_cycle(&scratch, Some("1"));
    let lines = runtime_debug_lines(&out);
    let plugin_field = format!("plugin={PLUGIN}");
    assert!(
        lines.iter().any(|l| l.contains(&plugin_field)),
        "no debug line names the plugin:\n{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&plugin_field) && l.contains("device=0")),
        "no debug line names plugin and device:\n{out}"
    );
    assert!(!out.stderr.contains("panicked"), "{out}");
    assert!(!out.stderr.contains("internal error"), "{out}");
    let log = plugin.log();
    assert_eq!(log.count("deinit_plugin"), 1, "{log}");
}

#[test]
fn a_successful_run_prints_nothing_without_debug() {
    for (label, level) in [("debug-unset", None), ("debug-zero", Some("0"))] {
        let scratch = Scratch::new(label);
        let (out, plugin) = run_cycle(&scratch, level);
        assert_eq!(out.stderr, "", "LIBOMPTARGET_DEBUG={level:?}\n{out}");
        let log = plugin.log();
        assert_eq!(log.count("deinit_plugin"), 1, "{log}");
    }
}

/// Debug output while the runtime shuts down at process exit (the
/// unregister in the program's `.fini_array`, after the main thread's
/// thread-local destructors ran) must not break the teardown.
///
/// Regression test: the stderr subscriber used to be
/// `tracing_subscriber::fmt`, which formats each event in a thread-local
/// buffer; at exit that buffer was already destroyed, so the first event
/// of the teardown panicked ("cannot access a Thread Local Storage value
/// during or after destruction"), the teardown stopped half way (no
/// deinit_plugin) and, with leaks to report, the process aborted. The
/// runtime's own subscriber (`src/trace/stderr.rs`) uses no thread-locals.
#[test]
fn debug_output_survives_the_shutdown_at_exit() {
    let scratch = Scratch::new("debug-at-exit");
    let program = scratch.join("teardown_order");
    clang(&["teardown_order.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("LIBOMPTARGET_DEBUG", "1")
        .run();
    assert!(!out.stderr.contains("panicked"), "{out}");
    assert!(!out.stderr.contains("internal error"), "{out}");
    out.assert_success();
    assert_eq!(out.value("sum"), "136", "{out}");
    let log = plugin.log();
    log.assert_every_alloc_freed_once();
    assert_eq!(log.count("deinit_plugin"), 1, "{log}");
    assert_eq!(log.lines.last().map(String::as_str), Some("fini"), "{log}");
}
