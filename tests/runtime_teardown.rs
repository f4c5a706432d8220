//! The teardown order, read from the test plugin's own log of entry calls:
//! memory freed (cached blocks, then user leaks) before images are
//! unloaded, before devices are deinitialised, before the plugin is, before
//! the library is closed (`fini`).
mod raw_device;

use omptarget_test_support as support;

use omptarget::abi::AllocKind;
use omptarget::image::OwnedImage;
use omptarget::{Config, DeviceBuffer, Phase, Runtime, ShutdownReport, StepOutcome, TeardownStep};
use support::plugin::{first, last};
use support::TestPlugin;

/// Two initialised devices (of three); device 0 with a cached block, a live
/// user allocation and a loaded image; device 1 with a cached block.
/// Returns the addresses (cached on 0, leaked on 0, cached on 1).
/// `image` must outlive the runtime (an `Image` handle cannot, by design).
fn populate(runtime: &Runtime, image: &OwnedImage) -> (usize, usize, usize) {
    let d0 = runtime.device(0).unwrap();
    let d1 = runtime.device(1).unwrap();
    let cached0 = raw_device::alloc(d0, 48, std::ptr::null_mut(), AllocKind::Default).unwrap();
    raw_device::free(d0, cached0).unwrap();
    let leaked = DeviceBuffer::<u64>::new(d0, 1000).unwrap(); // 8000 bytes: managed
    let leaked_addr = leaked.device_ptr().addr();
    std::mem::forget(leaked);
    // SAFETY: the caller keeps `image` alive until after the teardown.
    unsafe { d0.load_image(image.as_device_image()).unwrap() };
    let cached1 = DeviceBuffer::<u8>::new(d1, 192).unwrap(); // a whole size class
    let cached1_addr = cached1.device_ptr().addr();
    drop(cached1);
    assert_eq!(d0.memory_stats().cached_blocks, 1);
    assert_eq!(d0.memory_stats().live_blocks, 1);
    assert_eq!(d1.memory_stats().cached_bytes, 192);
    assert!(!runtime.device(2).unwrap().is_initialized());
    (cached0.addr(), leaked_addr, cached1_addr)
}

/// The order of the plugin's calls after the last call made by `populate`.
fn assert_teardown_order(plugin: &TestPlugin, addrs: (usize, usize, usize)) {
    let lines = plugin.log_lines();
    let calls = plugin.log_calls();
    let teardown_start = last(&calls, "load_binary") + 1;
    let deletes: Vec<&String> = lines[teardown_start..]
        .iter()
        .filter(|l| l.starts_with("data_delete "))
        .collect();
    let deleted = |id: u32, addr: usize| {
        deletes.iter().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f[1] == id.to_string() && parse_addr(f[2]) == addr
        })
    };
    assert!(deleted(0, addrs.0), "cached block of device 0: {deletes:?}");
    assert!(deleted(0, addrs.1), "leaked block of device 0: {deletes:?}");
    assert!(deleted(1, addrs.2), "cached block of device 1: {deletes:?}");
    assert_eq!(deletes.len(), 3, "{deletes:?}");

    let last_delete = last(&calls, "data_delete");
    let unload = first(&calls, "unload_binary");
    assert_eq!(lines[unload], "unload_binary 0");
    let deinit_devices: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("deinit_device"))
        .collect();
    assert_eq!(
        deinit_devices,
        ["deinit_device 0", "deinit_device 1"],
        "only initialised devices"
    );
    let deinit_plugin = first(&calls, "deinit_plugin");
    let fini = first(&calls, "fini");
    assert!(last_delete < unload, "{calls:?}");
    assert!(unload < first(&calls, "deinit_device"), "{calls:?}");
    assert!(last(&calls, "deinit_device") < deinit_plugin, "{calls:?}");
    assert!(deinit_plugin < fini, "{calls:?}");
    assert_eq!(
        fini,
        calls.len() - 1,
        "nothing after the library is closed: {calls:?}"
    );
}

fn vec_add_image() -> OwnedImage {
    let elf = std::fs::read(support::clang::build_kernel_image("vec_add.c")).unwrap();
    OwnedImage::new(&elf, &["vec_add"]).unwrap()
}

fn parse_addr(s: &str) -> usize {
    usize::from_str_radix(s.trim_start_matches("0x"), 16).expect("an address")
}

fn assert_report(report: &ShutdownReport, from_drop: bool) {
    use TeardownStep::*;
    let plugin = "libomptarget.rtl.test.so".to_string();
    let s = &report.steps;
    assert_eq!(s.len(), 10, "{report}");
    assert!(
        matches!(&s[0], DrainMemoryManager { device: 0, blocks: 1, bytes: 48, outcome: StepOutcome::Done, plugin: p } if *p == plugin)
    );
    assert!(matches!(
        &s[1],
        DrainMemoryManager {
            device: 1,
            blocks: 1,
            bytes: 192,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[2],
        FreeUserAllocations {
            device: 0,
            blocks: 1,
            bytes: 8000,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[3],
        FreeUserAllocations {
            device: 1,
            blocks: 0,
            bytes: 0,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[4],
        UnloadImages {
            device: 0,
            images: 1,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[5],
        UnloadImages {
            device: 1,
            images: 0,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[6],
        DeinitDevice {
            device: 0,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[7],
        DeinitDevice {
            device: 1,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[8],
        DeinitPlugin {
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        &s[9],
        ClosePlugin {
            outcome: StepOutcome::Done,
            ..
        }
    ));
    let phases: Vec<Phase> = s.iter().map(|s| s.phase()).collect();
    assert!(phases.windows(2).all(|w| w[0] <= w[1]), "phases in order");
    assert_eq!(
        (report.blocks_freed, report.bytes_freed),
        (3, 48 + 192 + 8000)
    );
    assert_eq!(report.user_leaks.len(), 1);
    assert_eq!(report.user_leaks[0].size, 8000);
    assert!(report.not_freed.is_empty(), "{report}");
    assert_eq!(report.image_dtors.len(), 1, "{report}");
    assert_eq!(report.image_dtors[0].device, 0);
    assert_eq!(
        report.image_dtors[0].outcome,
        omptarget::DtorsOutcome::RunByUnload
    );
    assert_eq!(report.from_drop, from_drop);
}

#[test]
fn shutdown_runs_the_steps_in_order() {
    let plugin = support::TestPlugin::isolated("devices=3\n");
    let image = vec_add_image();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    assert_eq!(runtime.device_count(), 3);
    let addrs = populate(&runtime, &image);
    let report = runtime.shutdown();
    println!("{report}");
    assert_report(&report, false);
    assert_teardown_order(&plugin, addrs);
}

#[test]
fn drop_without_shutdown_runs_the_same_teardown() {
    let plugin = support::TestPlugin::isolated("devices=3\n");
    let image = vec_add_image();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let addrs = populate(&runtime, &image);
    drop(runtime);
    assert_teardown_order(&plugin, addrs);
}

#[test]
fn a_destroyed_plugin_is_never_called_again_and_the_losses_are_reported() {
    let plugin = support::TestPlugin::isolated("devices=3\n");
    let image = vec_add_image();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let addrs = populate(&runtime, &image);
    let calls_before = plugin.log_calls().len();

    let device = runtime.device(0).unwrap();
    device.plugin().invoke_destruction_callback();
    assert!(!runtime.plugins()[0].alive);
    assert!(matches!(
        raw_device::alloc(device, 16, std::ptr::null_mut(), AllocKind::Default),
        Err(omptarget::Error::PluginDead { .. })
    ));
    assert!(matches!(
        DeviceBuffer::<u8>::new(runtime.device(1).unwrap(), 4),
        Err(omptarget::Error::PluginDead { .. })
    ));

    let report = runtime.shutdown();
    println!("{report}");
    let calls = plugin.log_calls();
    assert_eq!(
        &calls[calls_before..],
        ["fini"],
        "only the library's own destructor ran"
    );
    for step in &report.steps {
        let expected = match step {
            TeardownStep::DrainMemoryManager { blocks, .. }
            | TeardownStep::FreeUserAllocations { blocks, .. } => {
                assert_eq!(*blocks, 0);
                if step.device() == Some(1) && step.phase() == Phase::FreeUserAllocations {
                    &StepOutcome::Done // nothing to free there
                } else {
                    &StepOutcome::PluginDead
                }
            }
            TeardownStep::UnloadImages { device: 1, .. } => &StepOutcome::Done,
            TeardownStep::ClosePlugin { .. } => &StepOutcome::Done,
            _ => &StepOutcome::PluginDead,
        };
        assert_eq!(step.outcome(), expected, "{step}");
    }
    let what: Vec<&str> = report.not_freed.iter().map(|n| n.what.as_str()).collect();
    assert!(
        what.iter().any(|w| w.contains(&format!("{:#x}", addrs.0))),
        "{what:?}"
    );
    assert!(
        what.iter().any(|w| w.contains(&format!("{:#x}", addrs.1))),
        "{what:?}"
    );
    assert!(
        what.iter().any(|w| w.contains(&format!("{:#x}", addrs.2))),
        "{what:?}"
    );
    assert!(what.iter().any(|w| w.starts_with("image")), "{what:?}");
    // The image's destructors: not run, the plugin is gone.
    assert_eq!(report.image_dtors.len(), 1, "{report}");
    assert!(
        matches!(&report.image_dtors[0].outcome, omptarget::DtorsOutcome::NotRun(why) if why == "plugin already destroyed, unload_binary not called"),
        "{report}"
    );
    assert_eq!(what.iter().filter(|w| **w == "device state").count(), 2);
    assert_eq!(report.bytes_freed, 0);
    assert!(report.to_string().contains("could not be released"));
}

/// A plugin whose `deinit_plugin` says calls are still inside it
/// (`OFFLOAD_IN_USE`: a kernel still running) is not closed: its code may
/// still run, so the library stays mapped for the process, and the report
/// says why for both steps.
#[test]
fn a_plugin_still_in_use_at_deinit_is_not_closed() {
    let plugin = support::TestPlugin::isolated("devices=1\ndeinit_in_use=1\n");
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    assert_eq!(runtime.device_count(), 1);
    let report = runtime.shutdown();
    println!("{report}");
    let deinit = report
        .steps
        .iter()
        .find(|s| s.phase() == Phase::DeinitPlugins)
        .map(TeardownStep::outcome)
        .expect("a deinit step");
    assert!(
        matches!(deinit, StepOutcome::Failed(why) if why.contains("still in use")),
        "{report}"
    );
    let close = report
        .steps
        .iter()
        .find(|s| s.phase() == Phase::ClosePlugins)
        .map(TeardownStep::outcome)
        .expect("a close step");
    assert!(
        matches!(close, StepOutcome::Failed(why) if why.contains("stays loaded")),
        "{report}"
    );
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.contains(plugin.path.to_str().unwrap()),
        "the library is still mapped after shutdown"
    );
    assert_eq!(
        plugin.log_calls().last().map(String::as_str),
        Some("deinit_plugin"),
        "nothing called it after its deinit"
    );
}
