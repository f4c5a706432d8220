//! Eight host threads offloading at once through the shim: results right,
//! no deadlock (every run has a timeout), each device initialised and
//! loaded exactly once, and a clean teardown afterwards.

use omptarget_test_support::{clang::clang, clang::OFFLOAD, CallLog, Run, Scratch, TestPlugin};
use std::time::Duration;

const DEVICES: usize = 4;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Each device was initialised, loaded, used, and torn down exactly once,
/// whatever the number of threads that raced for it.
fn assert_each_device_once(log: &CallLog, regions: usize) {
    log.assert_every_alloc_freed_once();
    for device in 0..DEVICES {
        for call in [
            "init_device",
            "load_binary",
            "unload_binary",
            "deinit_device",
        ] {
            let line = format!("{call} {device}");
            let n = log.lines.iter().filter(|l| **l == line).count();
            assert_eq!(n, 1, "{line:?} {n} times\n{log}");
        }
    }
    assert_eq!(log.calls_starting("run_target").len(), regions, "{log}");
    assert_eq!(log.count("deinit_plugin"), 1, "{log}");
    assert_eq!(log.lines.last().map(String::as_str), Some("fini"), "{log}");
}

fn build(scratch: &Scratch, source: &str) -> std::path::PathBuf {
    let program = scratch.join(source.trim_end_matches(".c"));
    let mut flags = OFFLOAD.to_vec();
    flags.push("-pthread");
    clang(&[source], &program, &flags, &[]);
    program
}

#[test]
fn pthreads_offload_concurrently_on_the_test_plugin() {
    let scratch = Scratch::new("pthreads");
    let program = build(&scratch, "threads_pthreads.c");
    let plugin = TestPlugin::new(&scratch, "plugin", &[&format!("devices={DEVICES}")]);
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .timeout(TIMEOUT)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), DEVICES.to_string(), "{out}");
    assert_eq!(out.value("result"), "ok", "{out}");
    assert_eq!(out.stderr, "", "{out}");
    let regions: usize = out.value("regions").parse().expect("a count");
    assert_each_device_once(&plugin.log(), regions);
}

#[test]
fn omp_parallel_threads_map_and_offload_concurrently_on_the_test_plugin() {
    let scratch = Scratch::new("omp-parallel");
    let program = build(&scratch, "threads_omp_parallel.c");
    let plugin = TestPlugin::new(&scratch, "plugin", &[&format!("devices={DEVICES}")]);
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .timeout(TIMEOUT)
        .run();
    out.assert_success();
    assert_eq!(out.value("result"), "ok", "{out}");
    assert_eq!(out.value("regions"), "80", "8 threads x 10 regions\n{out}");
    assert_eq!(out.stderr, "", "{out}");
    assert_each_device_once(&plugin.log(), 80);
}

/// The shipped host plugin, found by the shim's own discovery (no
/// `OMPTARGET_PLUGINS`), under the same load.
#[test]
fn pthreads_offload_concurrently_on_the_discovered_host_plugin() {
    let scratch = Scratch::new("pthreads-host");
    let program = build(&scratch, "threads_pthreads.c");
    let out = Run::new(&scratch, &program)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1")
        .timeout(TIMEOUT)
        .run();
    out.assert_success();
    assert_eq!(out.value("result"), "ok", "{out}");
    assert!(
        out.value("devices").parse::<usize>().expect("a count") >= 1,
        "{out}"
    );
    // The runtime found the plugin next to itself and shut it down cleanly.
    assert!(
        out.stderr
            .contains("deinit plugin          libomptarget.rtl.x86_64.so: ok"),
        "{out}"
    );
    assert!(!out.stderr.contains("FAILED"), "{out}");
}

/// Build `api_during_dlopen.c` and the offload library it cycles, and run
/// it (`mode` is its optional second argument) on a one-device test plugin.
fn run_api_during_dlopen(
    label: &str,
    mode: Option<&str>,
) -> (omptarget_test_support::Outcome, TestPlugin) {
    let scratch = Scratch::new(label);
    let lib = scratch.join("liboffload_sum.so");
    let mut lib_flags = OFFLOAD.to_vec();
    lib_flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &lib_flags, &[]);
    let program = scratch.join("api_during_dlopen");
    let mut libs = omptarget_test_support::clang::link_shim();
    libs.extend(["-fopenmp".to_owned(), "-ldl".to_owned()]);
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(
        &["api_during_dlopen.c"],
        &program,
        &["-fopenmp", "-pthread"],
        &libs,
    );
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let mut run = Run::new(&scratch, &program).arg(&lib);
    if let Some(mode) = mode {
        run = run.arg(mode);
    }
    let out = run.plugin(&plugin).timeout(TIMEOUT).run();
    (out, plugin)
}

/// One thread calls `omp_get_num_devices()` in a loop while the main
/// thread dlopens, uses and dlcloses an offload library 50 times. LLVM 14
/// runs it in well under a second.
///
/// This deadlocked once (lock-order inversion between the shim's
/// lifecycle lock and the dynamic loader's lock): the querying thread
/// created the next runtime holding the lifecycle lock and dlopen'd the
/// plugins, while the main thread's next `dlopen` held the loader lock and
/// ran the library's constructor, which waited for the lifecycle lock.
#[test]
fn api_calls_during_dlopen_and_dlclose_do_not_deadlock() {
    let (out, plugin) = run_api_during_dlopen("api-during-dlopen", None);
    out.assert_success();
    assert_eq!(out.value("wrong"), "0", "{out}");
    plugin.log().assert_every_alloc_freed_once();
}

/// The same cycles while another thread allocates and frees device memory
/// on device 0: a block taken while the last dlclose decides to shut down
/// must not be freed by that shutdown (the program frees it), so no block
/// is ever deleted twice and nothing crashes.
#[test]
fn allocations_during_dlopen_and_dlclose_are_never_freed_twice() {
    let (out, plugin) = run_api_during_dlopen("alloc-during-dlopen", Some("alloc"));
    out.assert_success();
    assert_eq!(out.value("wrong"), "0", "{out}");
    assert_eq!(out.value("allocated_some"), "yes", "{out}");
    plugin.log().assert_every_alloc_freed_once();
}
