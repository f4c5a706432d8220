//! API calls racing the last dlclose, and blocks kept across it.

use super::under_valgrind::{valgrind_libs, VALGRIND_LIMIT_FACTOR};
use super::*;

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
        .env("LD_LIBRARY_PATH", valgrind_libs())
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
