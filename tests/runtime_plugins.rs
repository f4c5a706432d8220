//! Plugin loading: failures are skipped and reported, what they set up is
//! undone, the other plugins keep working, device numbers follow plugin
//! order.
mod raw_device;

use omptarget_test_support as support;

use omptarget::abi::AllocKind;
use omptarget::{Config, Error, Runtime, SkipReason, StepOutcome, TeardownStep};
use std::ptr::null_mut;

#[test]
fn devices_are_numbered_in_plugin_order() {
    let a = support::TestPlugin::isolated("devices=2\n");
    let b = support::TestPlugin::isolated("devices=3\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime =
        Runtime::new(unsafe { Config::default().with_plugins([&a.path, &b.path]) }).unwrap();
    assert_eq!(runtime.device_count(), 5);
    let plugins = runtime.plugins();
    assert_eq!(plugins.len(), 2);
    assert_eq!((plugins[0].first_device, plugins[0].device_count), (0, 2));
    assert_eq!((plugins[1].first_device, plugins[1].device_count), (2, 3));
    assert_eq!(plugins[1].path, b.path);
    assert!(plugins.iter().all(|p| p.alive));
    for (id, device) in runtime.devices().enumerate() {
        assert_eq!(device.id(), id);
        assert_eq!(device.local_id() as usize, if id < 2 { id } else { id - 2 });
    }
    // Device 3 is plugin b's device 1.
    let p = raw_device::alloc(
        runtime.device(3).unwrap(),
        8,
        null_mut(),
        AllocKind::Default,
    )
    .unwrap();
    assert!(b.log_lines().iter().any(|l| l == "init_device 1"));
    assert!(!a.log_lines().iter().any(|l| l.starts_with("init_device")));
    raw_device::free(runtime.device(3).unwrap(), p).unwrap();
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    for plugin in [&a, &b] {
        let calls = plugin.log_calls();
        assert_eq!(
            calls.first().map(String::as_str),
            Some("register_destruction_cb"),
            "{calls:?}"
        );
        assert_eq!(calls.last().map(String::as_str), Some("fini"), "{calls:?}");
    }
}

#[test]
fn a_device_failing_init_is_reported_on_every_use_and_others_work() {
    let plugin = support::TestPlugin::isolated("devices=3\nfail_init_device=1\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    assert_eq!(runtime.device_count(), 3);
    let bad = runtime.device(1).unwrap();
    for _ in 0..2 {
        match raw_device::alloc(bad, 8, null_mut(), AllocKind::Default) {
            Err(Error::DeviceInitFailed {
                device: 1, reason, ..
            }) => {
                assert!(reason.contains("init_device"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(bad.ensure_initialized().is_err());
    assert!(!bad.is_initialized());
    for id in [0, 2] {
        let device = runtime.device(id).unwrap();
        let p = raw_device::alloc(device, 8, null_mut(), AllocKind::Default).unwrap();
        raw_device::free(device, p).unwrap();
    }
    let lines = plugin.log_lines();
    assert_eq!(
        lines.iter().filter(|l| *l == "init_device 1").count(),
        1,
        "tried once"
    );
    let report = runtime.shutdown();
    assert!(
        report.steps.iter().all(|s| s.device() != Some(1)),
        "{report}"
    );
    let deinits: Vec<String> = plugin
        .log_lines()
        .into_iter()
        .filter(|l| l.starts_with("deinit_device"))
        .collect();
    assert_eq!(deinits, ["deinit_device 0", "deinit_device 2"]);
    assert!(report.is_clean(), "{report}");
}

#[test]
fn failed_plugins_are_skipped_cleanly_and_the_rest_still_work() {
    let failing_init = support::TestPlugin::isolated("fail_init_plugin=1\n");
    let no_devices = support::TestPlugin::isolated("devices=0\n");
    let incomplete = support::plugin::incomplete_plugin();
    let good = support::TestPlugin::isolated("devices=1\n");
    let missing = std::path::PathBuf::from("/nonexistent/libomptarget.rtl.none.so");
    let paths = [
        &failing_init.path,
        &incomplete.path,
        &missing,
        &no_devices.path,
        &good.path,
    ];
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins(paths) }).unwrap();

    let skipped = runtime.skipped_plugins();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert_eq!(skipped[0].path, failing_init.path);
    assert!(
        matches!(skipped[0].reason, SkipReason::InitPluginFailed(_)),
        "{}",
        skipped[0]
    );
    // init_plugin failed: nothing to deinit, only close.
    assert_eq!(skipped[0].undone, [("close", StepOutcome::Done)]);
    assert_eq!(
        failing_init.log_calls(),
        ["register_destruction_cb", "init_plugin", "fini"]
    );

    match &skipped[1].reason {
        SkipReason::MissingEntries(names) => {
            assert!(!names.is_empty());
            assert!(names
                .iter()
                .all(|n| omptarget::abi::plugin::names::REQUIRED.contains(n)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(skipped[1].undone, [("close", StepOutcome::Done)]);

    assert!(
        matches!(&skipped[2].reason, SkipReason::OpenFailed(msg) if msg.contains("nonexistent"))
    );
    assert!(skipped[2].undone.is_empty());

    assert_eq!(skipped[3].reason, SkipReason::NoDevices(0));
    assert_eq!(
        skipped[3].undone,
        [
            ("deinit_plugin", StepOutcome::Done),
            ("close", StepOutcome::Done)
        ]
    );
    assert_eq!(
        no_devices.log_calls(),
        [
            "register_destruction_cb",
            "init_plugin",
            "number_of_devices",
            "deinit_plugin",
            "fini"
        ]
    );
    assert!(skipped.iter().all(|s| !s.to_string().is_empty()));

    // The good plugin got device 0 and works.
    assert_eq!(runtime.device_count(), 1);
    assert_eq!(runtime.plugins()[0].path, good.path);
    let device = runtime.device(0).unwrap();
    let p = raw_device::alloc(device, 8, null_mut(), AllocKind::Default).unwrap();
    raw_device::free(device, p).unwrap();
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert!(matches!(
        report.steps.last(),
        Some(TeardownStep::ClosePlugin { .. })
    ));
}

#[test]
fn plugins_from_the_environment() {
    let a = support::TestPlugin::isolated("devices=1\n");
    let b = support::TestPlugin::isolated("devices=2\n");
    let list = format!("{}:{}", a.path.display(), b.path.display());
    // Only this test of this binary reads the environment.
    std::env::set_var(omptarget::config::ENV_PLUGINS, &list);
    std::env::set_var(omptarget::config::ENV_MM_THRESHOLD, "0");
    let config = Config::from_env();
    std::env::remove_var(omptarget::config::ENV_PLUGINS);
    std::env::remove_var(omptarget::config::ENV_MM_THRESHOLD);
    assert_eq!(
        config.plugins(),
        Some(&[a.path.clone(), b.path.clone()][..])
    );
    assert_eq!(config.memory_manager_threshold, 0);
    let runtime = Runtime::new(config).unwrap();
    assert_eq!(runtime.device_count(), 3);
    assert!(runtime.shutdown().is_clean());
}

#[test]
fn default_discovery_looks_next_to_the_runtime() {
    // The runtime is linked into this test executable, whose directory has
    // no plugins: only the built-in host plugin's devices, nothing skipped
    // (absent defaults are not failures).
    let runtime = Runtime::new(Config::default()).unwrap();
    assert_eq!(runtime.device_count(), 4);
    assert_eq!(runtime.plugin_count(), 1);
    assert!(runtime.skipped_plugins().is_empty());
    assert!(matches!(runtime.device(4), Err(Error::InvalidDevice(4))));
    let report = runtime.shutdown();
    // Unused devices are not initialised: deinit and close the plugin only.
    assert_eq!(report.steps.len(), 2, "{report}");
    assert!(report.is_clean(), "{report}");
}

#[test]
fn per_plugin_queries_for_the_openmp_layer() {
    let a = support::TestPlugin::isolated("devices=2\n");
    let b = support::TestPlugin::isolated("devices=3\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime =
        Runtime::new(unsafe { Config::default().with_plugins([&a.path, &b.path]) }).unwrap();
    assert_eq!(runtime.plugin_count(), 2);
    let second = runtime.plugin(1).unwrap();
    assert_eq!((second.first_device(), second.device_count()), (2, 3));
    assert_eq!(runtime.plugin_device(1, 2).unwrap().id(), 4);
    assert!(runtime.plugin_device(1, 3).is_none());
    assert!(runtime.plugin(2).is_none());

    let elf = std::fs::read(support::clang::build_kernel_image("vec_add.c")).unwrap();
    let image = omptarget::image::OwnedImage::new(&elf, &["vec_add"]).unwrap();
    // SAFETY: `image` is a valid descriptor, alive here.
    assert!(unsafe { second.is_valid_binary(image.as_device_image()) });
    let mut wrong = elf.clone();
    wrong[18] = 0xb7; // EM_AARCH64
    let wrong = omptarget::image::OwnedImage::new(&wrong, &["vec_add"]).unwrap();
    // SAFETY: as above.
    assert!(!unsafe { second.is_valid_binary(wrong.as_device_image()) });

    // Requires flags reach init_requires before init_device (if exported).
    let device = runtime.plugin_device(0, 1).unwrap();
    device
        .ensure_initialized_with_requires(omptarget::abi::requires::UNIFIED_SHARED_MEMORY)
        .unwrap();
    assert_eq!(
        runtime.plugin(0).unwrap().requires_flags(),
        omptarget::abi::requires::UNIFIED_SHARED_MEMORY
    );
    let lines = a.log_lines();
    let init = lines.iter().position(|l| l == "init_device 1").unwrap();
    if let Some(req) = lines.iter().position(|l| l.starts_with("init_requires")) {
        assert!(req < init, "{lines:?}");
    }
    assert!(runtime.shutdown().is_clean());
}

/// A plugin keeps process-wide state, so two live runtimes cannot share one
/// loaded library: the second skips it with a clear reason and never calls
/// into it; once the first shuts down, a new runtime can load it again.
#[test]
fn a_library_used_by_a_live_runtime_is_skipped_by_another() {
    let plugin = support::TestPlugin::isolated("devices=1\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let first = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    assert_eq!(first.device_count(), 1);
    let calls_before = plugin.log_calls().len();

    // Alone, the second runtime has no plugin: an error that says why.
    let Err(omptarget::Error::NoPluginLoaded { tried }) =
        // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
        Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) })
    else {
        panic!("a runtime whose only plugin is in use was built");
    };
    assert_eq!(tried.len(), 1);
    assert_eq!(tried[0].reason, SkipReason::InUseByAnotherRuntime);
    // Beside the built-in host plugin it is built, and lists the skip.
    let second = Runtime::new(
        // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
        unsafe { Config::default().with_plugins([&plugin.path]) }.with_builtin_host(true),
    )
    .unwrap();
    assert_eq!(second.device_count(), 4, "the built-in host devices only");
    let skipped = second.skipped_plugins();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].reason, SkipReason::InUseByAnotherRuntime);
    assert_eq!(skipped[0].undone, vec![("close", StepOutcome::Done)]);
    assert!(
        skipped[0].to_string().contains("another runtime"),
        "{}",
        skipped[0]
    );
    assert_eq!(
        plugin.log_calls().len(),
        calls_before,
        "the second runtime called into the first one's plugin: {:?}",
        plugin.log_calls()
    );
    let second_report = second.shutdown();
    // The first runtime still works.
    let device = first.device(0).unwrap();
    let p = raw_device::alloc(device, 16, null_mut(), AllocKind::Default).unwrap();
    raw_device::free(device, p).unwrap();
    assert!(first.shutdown().is_clean());
    assert!(
        second_report.to_string().contains("another runtime"),
        "{second_report}"
    );

    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let third = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    assert_eq!(third.device_count(), 1, "{:?}", third.skipped_plugins());
    assert!(third.shutdown().is_clean());
}

/// A plugin claiming 2^30 devices is skipped with the reason before any
/// per-device state exists (LLVM 14 aborts allocating for them); the
/// plugins around it still load and number their devices from 0.
#[test]
fn a_plugin_claiming_two_to_the_thirty_devices_is_skipped_with_the_reason() {
    let before = support::TestPlugin::isolated("devices=1\n");
    let huge = support::TestPlugin::isolated("devices=1\nclaimed_devices=1073741824\n");
    let after = support::TestPlugin::isolated("devices=2\n");
    let paths = [&before.path, &huge.path, &after.path];
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins(paths) }).unwrap();

    let skipped = runtime.skipped_plugins();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].path, huge.path);
    assert_eq!(
        skipped[0].reason,
        SkipReason::TooManyDevices {
            reported: 1 << 30,
            // One device is numbered already.
            room: omptarget::plugin::MAX_DEVICES - 1,
        }
    );
    let text = skipped[0].to_string();
    assert!(text.contains("reports 1073741824 devices"), "{text}");
    assert_eq!(
        skipped[0].undone,
        [
            ("deinit_plugin", StepOutcome::Done),
            ("close", StepOutcome::Done)
        ]
    );
    assert_eq!(
        huge.log_calls(),
        [
            "register_destruction_cb",
            "init_plugin",
            "number_of_devices",
            "deinit_plugin",
            "fini"
        ]
    );
    assert_eq!(runtime.device_count(), 3);
    let plugins = runtime.plugins();
    assert_eq!(plugins[0].path, before.path);
    assert_eq!(plugins[1].path, after.path);
    for id in 0..3 {
        let device = runtime.device(id).unwrap();
        let p = raw_device::alloc(device, 8, null_mut(), AllocKind::Default).unwrap();
        raw_device::free(device, p).unwrap();
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
}

/// A plugin with tens of thousands of devices (within the loader's limit)
/// costs nothing per device until a device is used: numbering them builds
/// none; using two builds two; the teardown touches only those.
#[test]
fn devices_are_built_on_first_use_only() {
    let many = support::TestPlugin::isolated("devices=2\nclaimed_devices=60000\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&many.path]) }).unwrap();
    assert_eq!(runtime.device_count(), 60000);
    assert_eq!(runtime.devices_in_use(), 0);
    for id in [1, 0] {
        let device = runtime.device(id).unwrap();
        assert_eq!(device.id(), id);
        let p = raw_device::alloc(device, 8, null_mut(), AllocKind::Default).unwrap();
        raw_device::free(device, p).unwrap();
    }
    assert!(runtime.device(60000).is_err());
    assert_eq!(runtime.devices_in_use(), 2);
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    let deinits = many
        .log_calls()
        .iter()
        .filter(|c| c.starts_with("deinit_device"))
        .count();
    assert_eq!(deinits, 2, "{:?}", many.log_calls());
}

/// A device whose plugin answers `DeviceInfoKey::Location` is outside this
/// process (`Device::is_remote`). A question for the location that fails
/// says nothing of where the device is: it is asked again, and the answer
/// that comes is kept. Before, the first failure was kept for the whole
/// process as "local", and a remote device was given none of the images
/// the local plugins took.
#[test]
fn a_failed_location_question_is_asked_again() {
    let plugin =
        support::TestPlugin::isolated("devices=1\nfail_location=1\nlocation=rank 1 on n7\n");
    // SAFETY: a plugin library of this project built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let device = runtime.device(0).unwrap();
    assert!(!device.is_remote(), "the failed question answers nothing");
    assert!(device.is_remote(), "asked again, the plugin answers");
    assert!(device.is_remote());
    // Kept once answered: two questions reached the plugin, not three.
    let log = plugin.log();
    let asked = log.lines.iter().filter(|l| *l == "get_device_info 0 7");
    assert_eq!(asked.count(), 2, "{log}");
    runtime.shutdown();
}

/// A device the plugin says cannot run an image (`is_device_compatible`):
/// `Device::can_run_image` says no there and yes on the plugin's other
/// device, without initialising either, and the typed `Image::load`
/// refuses it on that device with the reason, loading nothing.
#[test]
fn a_device_that_cannot_run_an_image_is_told_apart_and_refuses_it() {
    let plugin = support::TestPlugin::isolated("devices=2\nincompatible_device=1\n");
    // SAFETY: a plugin library of this project built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let elf = std::fs::read(support::clang::build_kernel_image("vec_add.c")).unwrap();
    let image = omptarget::image::OwnedImage::new(&elf, &["vec_add"]).unwrap();
    let (zero, one) = (runtime.device(0).unwrap(), runtime.device(1).unwrap());
    // SAFETY: `image` is a valid descriptor, alive here.
    assert!(unsafe { zero.can_run_image(image.as_device_image()) });
    // SAFETY: as above.
    assert!(!unsafe { one.can_run_image(image.as_device_image()) });
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { omptarget::Image::load(one, &elf, &["vec_add"]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidImage { device: 1, reason, .. } if reason.contains("is_device_compatible")),
        "{err}"
    );
    assert_eq!(one.loaded_image_count(), 0);
    // SAFETY: as above.
    let loaded = unsafe { omptarget::Image::load(zero, &elf, &["vec_add"]) }.unwrap();
    drop(loaded);
    let log = plugin.log();
    assert!(log.lines.iter().all(|l| l != "load_binary 1"), "{log}");
    // Asking initialised nothing: device 1 never started.
    assert!(log.lines.iter().all(|l| l != "init_device 1"), "{log}");
    assert!(runtime.shutdown().is_clean());
}

/// A question the plugin fails to answer (`is_device_compatible`
/// panicking inside the plugin: 0 with a last error) counts as yes, as
/// without the entry: the image is offered, and its load says what is
/// wrong. Nothing unwinds out of the entry.
#[test]
fn a_failed_device_question_offers_the_image() {
    let plugin = support::TestPlugin::isolated("devices=1\npanic_in=is_device_compatible\n");
    // SAFETY: a plugin library of this project built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let elf = std::fs::read(support::clang::build_kernel_image("vec_add.c")).unwrap();
    let image = omptarget::image::OwnedImage::new(&elf, &["vec_add"]).unwrap();
    let device = runtime.device(0).unwrap();
    // SAFETY: `image` is a valid descriptor, alive here.
    assert!(unsafe { device.can_run_image(image.as_device_image()) });
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let loaded = unsafe { omptarget::Image::load(device, &elf, &["vec_add"]) }.unwrap();
    drop(loaded);
    let log = plugin.log();
    assert!(
        log.lines.iter().any(|l| l == "is_device_compatible 0"),
        "{log}"
    );
    assert!(log.lines.iter().any(|l| l == "load_binary 0"), "{log}");
    assert!(runtime.shutdown().is_clean());
}
