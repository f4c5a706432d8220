//! Plugin faults during the shim's lifecycle, injected through the test
//! plugin's conf: the program still ends normally and the teardown still
//! closes the library.

use omptarget_test_support::{clang::clang, clang::OFFLOAD, Run, Scratch, TestPlugin};

/// A plugin whose initialisation fails is closed at once; LLVM 14 then
/// has no device and runs the region on the host. The runtime lives until
/// exit, so a later dlopen cycle does not try the plugin again.
#[test]
fn a_plugin_that_fails_to_initialise_is_closed_and_regions_fall_back_to_the_host() {
    let scratch = Scratch::new("fail-init-plugin");
    let lib = scratch.join("liboffload_sum.so");
    let mut lib_flags = OFFLOAD.to_vec();
    lib_flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &lib_flags, &[]);
    let program = scratch.join("dlopen_cycles");
    clang(&["dlopen_cycles.c"], &program, &[], &["-ldl"]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["fail_init_plugin=1"]);
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .arg("2")
        .plugin(&plugin)
        .run();
    out.assert_success();
    assert_eq!(out.value("cycle0"), "5050", "{out}");
    assert_eq!(out.value("cycle1"), "5151", "{out}");
    let log = plugin.log();
    assert_eq!(
        log.lines,
        [
            // One runtime per process: the plugin is tried once, at the
            // first registration, and not again for the second cycle.
            "register_destruction_cb",
            "init_plugin",
            "fini"
        ],
        "{log}"
    );
    // The plugin says why; the runtime adds nothing (as LLVM 14).
    assert_eq!(
        out.stderr.lines().collect::<Vec<_>>(),
        [
            "omptarget-rs plugin test: error in __tgt_rtl_init_plugin: fault injected: fail_init_plugin=1";
            1
        ],
        "{out}"
    );
}

/// `deinit_plugin` panicking inside the plugin at exit: the report says the
/// step failed, the library is still closed, the process exits 0.
#[test]
fn a_plugin_panicking_in_deinit_plugin_at_exit_is_reported_and_still_closed() {
    let scratch = Scratch::new("panic-deinit-plugin");
    let program = scratch.join("teardown_order");
    clang(&["teardown_order.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2", "panic_in=deinit_plugin"]);
    let report_path = scratch.join("report.txt");
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", &report_path)
        .run();
    out.assert_success();
    assert_eq!(out.value("sum"), "136", "{out}");
    let log = plugin.log();
    log.assert_every_alloc_freed_once();
    let tail: Vec<&str> = log.lines.iter().rev().take(2).map(String::as_str).collect();
    assert_eq!(tail, ["fini", "deinit_plugin"], "{log}");
    let report = std::fs::read_to_string(&report_path).expect("the report file");
    assert!(
        report.contains("deinit plugin          libomptarget.rtl.test.so: FAILED"),
        "{report}"
    );
    assert!(
        report.contains("close plugin           libomptarget.rtl.test.so: ok"),
        "{report}"
    );
    assert!(
        out.stderr.contains("panic_in=deinit_plugin"),
        "the plugin reports its panic:\n{out}"
    );
}

/// A plugin that claims 2^30 devices is skipped with a message before
/// anything is allocated for them (LLVM 14 aborts on the allocation); the
/// next plugin is used, and the process stays far below 1 GB of address
/// space (run under `ulimit -v`, so an allocation for the devices fails).
#[test]
fn a_plugin_claiming_two_to_the_thirty_devices_is_skipped() {
    let scratch = Scratch::new("huge-device-count");
    let program = scratch.join("huge_device_count");
    clang(&["huge_device_count.c"], &program, OFFLOAD, &[]);
    let huge = TestPlugin::new(
        &scratch,
        "huge",
        &["devices=1", "claimed_devices=1073741824"],
    );
    let good = TestPlugin::new(&scratch, "good", &["devices=1"]);
    let plugins = format!("{}:{}", huge.path.display(), good.path.display());
    let limited = format!("ulimit -v 1000000 && exec {}", program.display());
    let out = Run::new(&scratch, std::path::Path::new("/bin/sh"))
        .env("OMPTARGET_PLUGINS", plugins)
        .arg("-c")
        .arg(limited)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), "1", "{out}");
    assert_eq!(out.value("x"), "42", "{out}");
    assert_eq!(out.value("on_host"), "0", "ran on the good plugin\n{out}");
    let peak: u64 = out.value("vm_peak_kb").parse().unwrap();
    assert!(peak < 1_000_000, "VmPeak {peak} kB\n{out}");
    let message = format!(
        "Libomptarget warning: skipping plugin {}: reports 1073741824 devices, more than the 65536 this runtime can still number (at most 65536 per plugin, 65536 in all); deinit_plugin: ok; close: ok",
        huge.path.display()
    );
    assert_eq!(out.stderr.lines().collect::<Vec<_>>(), [message], "{out}");
    // Only its load-time entries ran: no device was touched.
    let log = huge.log();
    assert_eq!(log.count("init_device"), 0, "{log}");
    assert_eq!(log.count("number_of_devices"), 1, "{log}");
}

/// A device that can run none of the program's images
/// (`is_device_compatible` says no, as a device of another kind would):
/// the image is registered on the plugin's other devices only, as LLVM
/// 20+ registers it. Both devices are asked; the one that says yes loads
/// the image and runs its region; the other is never given the image, and
/// a region there is a fatal error naming it (offloading is mandatory
/// while there are devices). Before, every device of a plugin that
/// accepted an image got it.
#[test]
fn an_image_is_registered_only_on_the_devices_that_can_run_it() {
    let scratch = Scratch::new("device-images");
    let program = scratch.join("device_images");
    clang(&["device_images.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2", "incompatible_device=1"]);
    let out = Run::new(&scratch, &program).arg("0").plugin(&plugin).run();
    out.assert_success();
    assert_eq!(out.value("devices"), "2", "{out}");
    assert_eq!(out.value("ran_on_device"), "1", "{out}");
    assert_eq!(out.value("value"), "7", "{out}");
    let log = plugin.log();
    let calls: Vec<&str> = log.lines.iter().map(String::as_str).collect();
    assert!(calls.contains(&"is_device_compatible 0"), "{log}");
    assert!(calls.contains(&"is_device_compatible 1"), "{log}");
    assert!(calls.contains(&"load_binary 0"), "{log}");
    assert!(!calls.contains(&"load_binary 1"), "{log}");
    log.assert_every_alloc_freed_once();

    let plugin = TestPlugin::new(
        &scratch,
        "plugin-1",
        &["devices=2", "incompatible_device=1"],
    );
    let out = Run::new(&scratch, &program).arg("1").plugin(&plugin).run();
    assert!(!out.status.success(), "{out}");
    assert_eq!(out.value("devices"), "2", "{out}");
    assert!(
        out.stderr
            .contains("device 1 has no image of this program (none of its images can run there)"),
        "{out}"
    );
    let log = plugin.log();
    assert!(
        !log.lines.iter().any(|l| l.starts_with("load_binary")),
        "{log}"
    );
}
