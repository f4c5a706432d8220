//! The shim's lifecycle through the C ABI, with clang-14 programs on the
//! staged `libomptarget.so` and the call-recording test plugin:
//! teardown order at exit, a fresh runtime after the last unregister, the
//! finalizer safety net, and no runtime before the first call.

use omptarget_test_support::{
    clang::clang, clang::has_dynamic_symbol, clang::link_shim, clang::OFFLOAD, CallLog, Run,
    Scratch, TestPlugin,
};

/// The index of the only line calling `name`.
fn only(log: &CallLog, name: &str) -> usize {
    let at = log.positions(name);
    assert_eq!(at.len(), 1, "expected exactly one {name}\n{log}");
    at[0]
}

/// Every line calling `first` comes before every line calling `then`
/// (and both occur).
fn all_before(log: &CallLog, first: &str, then: &str) {
    let a = log.positions(first);
    let b = log.positions(then);
    assert!(!a.is_empty(), "no {first} in the log\n{log}");
    assert!(!b.is_empty(), "no {then} in the log\n{log}");
    assert!(
        a.iter().max() < b.iter().min(),
        "every {first} must come before every {then}\n{log}"
    );
}

#[test]
fn teardown_at_exit_frees_everything_before_unloading_in_the_fixed_order() {
    let scratch = Scratch::new("teardown");
    let program = scratch.join("teardown_order");
    clang(&["teardown_order.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
    let report_path = scratch.join("report.txt");

    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", &report_path)
        .run();
    out.assert_success();
    assert_eq!(out.value("sum"), "136", "{out}");
    assert_eq!(out.value("present"), "1", "{out}");
    assert_eq!(out.stderr, "", "a clean run prints nothing:\n{out}");

    let log = plugin.log();
    // The region really ran on the plugin's device 0.
    assert_eq!(log.calls_starting("run_target").len(), 1, "{log}");
    log.assert_every_alloc_freed_once();

    // The teardown: everything freed, then images, devices, plugin, close.
    let unload = only(&log, "unload_binary");
    assert_eq!(log.lines[unload], "unload_binary 0", "{log}");
    let deinit_plugin = only(&log, "deinit_plugin");
    let fini = only(&log, "fini");
    assert_eq!(
        fini,
        log.lines.len() - 1,
        "fini must be the last call\n{log}"
    );
    all_before(&log, "data_delete", "unload_binary");
    all_before(&log, "unload_binary", "deinit_device");
    all_before(&log, "deinit_device", "deinit_plugin");
    assert!(deinit_plugin < fini, "{log}");
    // Both devices were used (the region on 0, omp_target_alloc on 1), so
    // both are deinitialised, once each.
    let mut deinit_devices: Vec<&str> = log.calls_starting("deinit_device");
    deinit_devices.sort_unstable();
    assert_eq!(
        deinit_devices,
        ["deinit_device 0", "deinit_device 1"],
        "{log}"
    );
    // Nothing reaches the plugin after deinit_plugin but the close.
    assert_eq!(deinit_plugin + 1, fini, "{log}");

    // The report names what the program left behind.
    let report = std::fs::read_to_string(&report_path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}\n{out}", report_path.display()));
    assert_eq!(
        report.matches("omptarget shutdown").count(),
        1,
        "one shutdown:\n{report}"
    );
    let allocated = out.value("allocated");
    assert!(
        report.contains(&format!("device 1: {allocated}, 64 bytes")),
        "the never-freed omp_target_alloc block is not reported:\n{report}"
    );
    let mapping_prefix = format!(
        "device 0: host {}+{} -> ",
        out.value("mapped_host"),
        out.value("mapped_size")
    );
    let mapping = report
        .lines()
        .find_map(|l| l.trim().strip_prefix(mapping_prefix.as_str()))
        .unwrap_or_else(|| panic!("the leaked mapping is not reported:\n{report}"));
    // Its device block is among the user's leaks, freed by the teardown.
    let device_block = mapping.split_whitespace().next().unwrap_or_default();
    assert!(
        report.contains(&format!("device 0: {device_block}, 32 bytes")),
        "the mapped block {device_block} is not among the leaks:\n{report}"
    );
    for step in [
        "free user allocations  device 0",
        "free user allocations  device 1",
        "unload images          device 0",
        "deinit plugin",
        "close plugin",
    ] {
        let line = report
            .lines()
            .find(|l| l.contains(step))
            .unwrap_or_else(|| panic!("no step {step:?}:\n{report}"));
        assert!(line.ends_with(": ok"), "{line}\n{report}");
    }
}

/// Clang 14's device global destructors are kernels (`DTOR` entries) the
/// main program's unregistration runs at exit: in reverse order, after
/// main's `exit`, before the teardown unloads the image and deinitialises
/// the device; the report lists them with the image. (The differential
/// suite runs this program for 19 and 22 only: LLVM 14 crashes on it.)
#[test]
fn device_global_destructors_run_at_exit_before_the_unload_and_are_reported() {
    let scratch = Scratch::new("global-dtors");
    let program = scratch.join("device_global_dtor_at_exit");
    let source = omptarget_test_support::paths::workspace_root()
        .join("tests/c/device_global_dtor_at_exit.cpp");
    let mut flags = vec!["-Wno-unneeded-internal-declaration", "-x", "c++"];
    flags.extend(OFFLOAD);
    clang(&[source.to_str().unwrap()], &program, &flags, &["-lstdc++"]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let report_path = scratch.join("report.txt");
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", &report_path)
        .run();
    out.assert_success();
    // The device destructors come last, in the reverse order of the
    // device constructors (whose order clang 14 picks).
    let lines: Vec<&str> = out.stdout.lines().collect();
    let device = |what: &str| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(&format!("device {what} ")))
            .map(str::to_owned)
            .collect()
    };
    let mut ctors = device("constructor");
    ctors.reverse();
    assert_eq!(device("destructor"), ctors, "{out}");
    assert_eq!(ctors.len(), 2, "{out}");
    assert!(
        lines[lines.len() - 2..]
            .iter()
            .all(|l| l.starts_with("device destructor ")),
        "{out}"
    );
    // Two constructor kernels, the region, two destructor kernels; then
    // the unload, then the device's deinit.
    let log = plugin.log();
    assert_eq!(log.calls_starting("run_target").len(), 5, "{log}");
    all_before(&log, "run_target_team_region_async", "unload_binary");
    all_before(&log, "unload_binary", "deinit_device");
    let report = std::fs::read_to_string(&report_path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}\n{out}", report_path.display()));
    let line = report
        .lines()
        .find(|l| l.contains("dtor entries"))
        .unwrap_or_else(|| panic!("no image destructors line:\n{report}"));
    assert!(
        line.ends_with(
            " 2 dtor entries: 2 run at unregistration, 0 failed): destructors run by unload_binary"
        ),
        "{report}"
    );
}

#[test]
fn dlclose_cycles_share_one_runtime_torn_down_once_at_exit() {
    const CYCLES: usize = 3;
    let scratch = Scratch::new("cycles");
    let lib = scratch.join("liboffload_sum.so");
    let mut lib_flags = OFFLOAD.to_vec();
    lib_flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &lib_flags, &[]);
    let program = scratch.join("dlopen_cycles");
    clang(&["dlopen_cycles.c"], &program, &[], &["-ldl"]);
    // The main program has nothing to register; the library does.
    assert!(!has_dynamic_symbol(&program, "__tgt_register_lib"));
    assert!(has_dynamic_symbol(&lib, "__tgt_register_lib"));
    assert!(has_dynamic_symbol(&lib, "__tgt_unregister_lib"));

    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let report_path = scratch.join("report.txt");
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .arg(CYCLES.to_string())
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", &report_path)
        .run();
    out.assert_success();
    assert_eq!(out.stderr, "", "{out}");
    for c in 0..CYCLES {
        let n = 100 + c;
        assert_eq!(
            out.value(&format!("cycle{c}")),
            (n * (n + 1) / 2).to_string(),
            "{out}"
        );
    }

    // One runtime for the whole process (as LLVM's): each dlclose unloads
    // the library's image; the plugin is torn down once, at exit.
    let log = plugin.log();
    log.assert_every_alloc_freed_once();
    assert_eq!(
        log.instances().len(),
        1,
        "one plugin load per process\n{log}"
    );
    assert_eq!(log.count("init_plugin"), 1, "{log}");
    assert_eq!(log.count("init_device"), 1, "{log}");
    assert_eq!(log.count("load_binary"), CYCLES, "{log}");
    assert_eq!(log.count("unload_binary"), CYCLES, "{log}");
    assert_eq!(log.calls_starting("run_target").len(), CYCLES, "{log}");
    let loads = log.positions("load_binary");
    let unloads = log.positions("unload_binary");
    for c in 0..CYCLES {
        assert!(loads[c] < unloads[c], "cycle {c} out of order\n{log}");
        if c + 1 < CYCLES {
            assert!(unloads[c] < loads[c + 1], "cycle {c} out of order\n{log}");
        }
    }
    let deinit_device = only(&log, "deinit_device");
    let deinit = only(&log, "deinit_plugin");
    let fini = only(&log, "fini");
    assert!(
        unloads[CYCLES - 1] < deinit_device
            && deinit_device < deinit
            && deinit + 1 == fini
            && fini == log.lines.len() - 1,
        "teardown out of order\n{log}"
    );

    let report = std::fs::read_to_string(&report_path).expect("the report file");
    assert_eq!(
        report.matches("omptarget shutdown:").count(),
        1,
        "one report, at exit:\n{report}"
    );
    assert_eq!(
        report
            .matches("deinit plugin          libomptarget.rtl.test.so: ok")
            .count(),
        1,
        "{report}"
    );
    // The library cleaned up after itself each time: nothing leaked.
    assert!(!report.contains("still held"), "{report}");
    assert!(!report.contains("mappings still present"), "{report}");
}

/// Build `api_only.c`, run it (with `args`) on a fresh test plugin, and
/// check that, as with LLVM 14, a program that registers no offload binary
/// has no devices and loads no plugin: its API calls see only the host.
fn api_only_program_loads_no_plugin(label: &str, args: &[&str]) {
    let scratch = Scratch::new(label);
    let program = scratch.join("api_only");
    let mut libs = link_shim();
    libs.push("-fopenmp".to_owned());
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(&["api_only.c"], &program, &["-fopenmp"], &libs);
    // Nothing registers: the session is created by the API calls alone.
    assert!(!has_dynamic_symbol(&program, "__tgt_register_lib"));
    assert!(has_dynamic_symbol(&program, "omp_target_alloc"));

    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
    let mut run = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1");
    for arg in args {
        run = run.arg(arg);
    }
    let out = run.run();
    out.assert_success();
    // LLVM 14: devices exist only for registered images; the initial
    // device (the host) is then number 0.
    assert_eq!(out.value("devices"), "0", "{out}");
    assert_eq!(out.value("initial"), "0", "{out}");
    assert_eq!(out.value("host_block"), "allocated", "{out}");
    assert_eq!(out.value("beyond_last_device"), "null", "{out}");
    assert!(
        !plugin.log_path.exists(),
        "no binary registered, yet a plugin was loaded:\n{}",
        plugin.log()
    );
    assert_eq!(
        out.stderr.matches("omptarget shutdown:").count(),
        0,
        "nothing was loaded, so nothing is torn down:\n{out}"
    );
}

#[test]
fn a_program_that_registers_nothing_loads_no_plugin() {
    api_only_program_loads_no_plugin("api-only", &[]);
}

#[test]
fn unregistering_a_descriptor_never_registered_is_harmless() {
    api_only_program_loads_no_plugin("unknown-unregister", &["unregister_unknown"]);
}

#[test]
fn loading_the_library_creates_no_runtime() {
    let scratch = Scratch::new("lazy");
    let program = scratch.join("links_only");
    let libs = link_shim();
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(
        &["links_only.c"],
        &program,
        &[],
        &[&libs[..], &["-ldl"]].concat(),
    );

    let plugin = TestPlugin::new(&scratch, "plugin", &[]);
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1")
        .env("LIBOMPTARGET_DEBUG", "1")
        .run();
    out.assert_success();
    // The shim was loaded (its constructors and finalizer ran) ...
    assert_eq!(out.value("runtime_library_loaded"), "yes", "{out}");
    // ... yet no plugin was loaded, no runtime shut down, nothing printed.
    assert!(
        !plugin.log_path.exists(),
        "the plugin was loaded:\n{}",
        plugin.log()
    );
    assert_eq!(out.stderr, "", "{out}");
}

/// A device block allocated while an offload library is loaded and freed
/// after its dlclose: valid under LLVM 14 (the runtime and its devices
/// live until exit, so the free goes to device 0). The last unregister
/// must not shut down while the program holds device memory: the session
/// lives on and the safety net shuts it down at exit.
#[test]
fn a_block_held_across_the_last_dlclose_is_not_freed_twice() {
    let scratch = Scratch::new("hold-across-dlclose");
    let lib = scratch.join("liboffload_sum.so");
    let mut lib_flags = OFFLOAD.to_vec();
    lib_flags.extend(["-shared", "-fPIC"]);
    clang(&["offload_sum_lib.c"], &lib, &lib_flags, &[]);
    let program = scratch.join("hold_across_dlclose");
    let mut libs = link_shim();
    libs.extend(["-fopenmp".to_owned(), "-ldl".to_owned()]);
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    clang(&["hold_across_dlclose.c"], &program, &["-fopenmp"], &libs);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .plugin(&plugin)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1")
        .run();
    out.assert_success();
    assert_eq!(out.value("sum"), "55", "{out}");
    assert_eq!(out.value("freed"), "yes", "{out}");
    assert_eq!(out.value("distinct"), "yes", "{out}");
    let log = plugin.log();
    log.assert_every_alloc_freed_once();
    // One runtime for the whole run: the dlclose did not shut it down
    // (the program held device memory); the safety net did, at exit.
    assert_eq!(log.count("init_plugin"), 1, "{log}");
    assert_eq!(log.count("deinit_plugin"), 1, "{log}");
    assert_eq!(log.lines.last().map(String::as_str), Some("fini"), "{log}");
    assert_eq!(
        out.stderr.matches("omptarget shutdown:").count(),
        1,
        "the safety net emits the report, once:\n{out}"
    );
}

/// `__tgt_set_info_flag` called before the first registration (from a
/// preloaded library's constructor, which runs before the program's): the
/// plugins, loaded later by the registration, get the flags when they load.
/// Before the fix, the flags went to the runtime's own info level only, and
/// no plugin ever heard of them.
#[test]
fn an_info_flag_set_before_the_plugins_load_reaches_them() {
    let scratch = Scratch::new("info-flag-early");
    let preload = scratch.join("libinfo_flag_preload.so");
    clang(
        &["info_flag_preload.c"],
        &preload,
        &["-shared", "-fPIC"],
        &[],
    );
    let program = scratch.join("teardown_order");
    clang(&["teardown_order.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
    let out = Run::new(&scratch, &program)
        .plugin(&plugin)
        .env("LD_PRELOAD", &preload)
        .run();
    out.assert_success();
    let log = plugin.log();
    let init = only(&log, "init_plugin");
    let flag = only(&log, "set_info_flag");
    assert_eq!(log.lines[flag], "set_info_flag 0x10", "{log}");
    // Given when the plugin loads, so before its first region.
    let first_region = log
        .lines
        .iter()
        .position(|l| l.starts_with("run_target"))
        .expect("the program ran a region");
    assert!(init < flag && flag < first_region, "{log}");
}
