//! The runtime drives LLVM 14's own x86_64 plugin (from libomp-14-dev):
//! proof that plugin loading, images and launches follow LLVM's ABI and not
//! only our plugins' reading of it.

use omptarget_test_support as support;

use omptarget::{
    Config, DeviceBuffer, Error, Image, Kernel, LaunchConfig, Ptr, PtrMut, Runtime, StepOutcome,
    TeardownStep,
};
use std::path::Path;

const LLVM_PLUGIN: &str = "/usr/lib/llvm-14/lib/libomptarget.rtl.x86_64.so";

#[test]
fn vec_add_on_llvm_x86_64_plugin() -> anyhow::Result<()> {
    assert!(
        Path::new(LLVM_PLUGIN).is_file(),
        "libomp-14-dev is not installed"
    );
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([LLVM_PLUGIN]) })?;
    assert!(
        runtime.skipped_plugins().is_empty(),
        "{:?}",
        runtime.skipped_plugins()
    );
    let plugins = runtime.plugins();
    assert_eq!(plugins.len(), 1);
    assert_eq!(plugins[0].device_count, 4, "LLVM's plugin has 4 devices");
    assert!(
        plugins[0].optional_entries.is_empty(),
        "{:?}",
        plugins[0].optional_entries
    );

    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    {
        let device = runtime.device(2)?;
        // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
        let image = unsafe {
            Image::load_file(
                device,
                support::clang::build_kernel_image("vec_add.c"),
                &["vec_add"],
            )
        }?;
        type VecAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, isize);
        // SAFETY: vec_add(const float*, const float*, float*, intptr_t n)
        // touches n values of each buffer.
        let kernel: Kernel<VecAdd> = unsafe { image.kernel("vec_add")? };
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let mut dc = DeviceBuffer::<f32>::new(device, n)?;
        // Pointer-sized arguments only: LLVM's plugin runs it.
        // SAFETY: every length passed is at most its buffer's length.
        unsafe {
            kernel.launch_unchecked(LaunchConfig::teams(1, 1), (&da, &db, &mut dc, n as isize))
        }?;
        type Scale = (f32, Ptr<f32>, PtrMut<f32>, usize);
        // A float argument needs `__tgt_rtl_run_typed_region`, which LLVM's
        // plugin lacks: refused, never passed wrong.
        // SAFETY: never runs (refused before the plugin is called).
        let typed: Kernel<Scale> = unsafe { image.kernel("vec_add")? };
        // SAFETY: every length passed is at most its buffer's length.
        let err =
            unsafe { typed.launch_unchecked(LaunchConfig::single(), (1.0f32, &da, &mut dc, n)) }
                .unwrap_err();
        assert!(
            matches!(err, Error::Unsupported { .. })
                && err.to_string().contains("floating-point kernel arguments"),
            "{err}"
        );
        let c = dc.to_vec()?;
        for i in 0..n {
            assert_eq!(c[i], a[i] + b[i], "element {i}");
        }
        // LLVM's plugin has no `__tgt_rtl_load_binary_flags`: an object
        // calling a function that exists nowhere loads as that plugin loads
        // every image, lazily (ours refuses it: runtime_api.rs).
        // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
        let lazy = unsafe {
            Image::load_file(
                device,
                support::clang::build_kernel_image("calls_missing.c"),
                &["calls_missing"],
            )
        }?;
        assert_eq!(lazy.entry_names().collect::<Vec<_>>(), ["calls_missing"]);
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    // LLVM's plugin has none of the lifecycle entries.
    assert!(report.steps.iter().any(|s| matches!(
        s,
        TeardownStep::UnloadImages {
            device: 2,
            outcome: StepOutcome::NotExported,
            ..
        }
    )));
    assert!(report.steps.iter().any(|s| matches!(
        s,
        TeardownStep::DeinitPlugin {
            outcome: StepOutcome::NotExported,
            ..
        }
    )));
    assert!(matches!(
        report.steps.last(),
        Some(TeardownStep::ClosePlugin {
            outcome: StepOutcome::Done,
            ..
        })
    ));
    // The cache held the three 4000-byte buffers, allocated as their size
    // class (4096 bytes); drained first.
    match &report.steps[0] {
        TeardownStep::DrainMemoryManager {
            device: 2,
            blocks: 3,
            bytes: 12288,
            outcome: StepOutcome::Done,
            ..
        } => {}
        other => panic!("first step: {other}"),
    }
    Ok(())
}

/// LLVM's plugin has no `__tgt_rtl_data_delete_batch`: the drain falls
/// back to one `data_delete` per cached block, and frees them all.
#[test]
fn drain_without_the_batch_entry_deletes_block_by_block() -> anyhow::Result<()> {
    assert!(
        Path::new(LLVM_PLUGIN).is_file(),
        "libomp-14-dev is not installed"
    );
    // A private copy: a library serves one live runtime at a time, and the
    // other test of this file may hold LLVM_PLUGIN's.
    let dir = tempfile::tempdir()?;
    let copy = dir.path().join("libomptarget.rtl.x86_64.so");
    std::fs::copy(LLVM_PLUGIN, &copy)?;
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&copy]) })?;
    {
        let device = runtime.device(1)?;
        let buffers: Vec<_> = (0..200)
            .map(|i| DeviceBuffer::<u8>::new(device, 16 << (i % 9)))
            .collect::<Result<_, _>>()?;
        drop(buffers);
        assert_eq!(device.memory_stats().cached_blocks, 200);
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.blocks_freed, 200, "{report}");
    let drained = report.steps.iter().find_map(|s| match s {
        TeardownStep::DrainMemoryManager {
            device: 1,
            blocks,
            outcome,
            ..
        } => Some((*blocks, outcome.clone())),
        _ => None,
    });
    assert_eq!(drained, Some((200, StepOutcome::Done)), "{report}");
    Ok(())
}

/// LLVM's plugin has no `__tgt_rtl_get_device_info`: its devices' properties
/// are what the runtime knows (the plugin's name and path) and `None` for
/// the rest, never an error; its launches are not checked against limits
/// it does not report (it ignores teams and threads, as for clang's
/// regions).
#[test]
fn llvm_plugin_devices_have_properties_without_the_entry() -> anyhow::Result<()> {
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([LLVM_PLUGIN]) })?;
    let device = runtime.device(0)?;
    let properties = device.properties()?;
    assert_eq!(properties.plugin_name, "libomptarget.rtl.x86_64.so");
    assert_eq!(properties.plugin_path, Path::new(LLVM_PLUGIN));
    assert_eq!(properties.name, None);
    assert_eq!(properties.kind, None);
    assert_eq!(
        (properties.total_memory, properties.free_memory),
        (None, None)
    );
    assert_eq!((properties.max_teams, properties.max_threads), (None, None));
    assert_eq!(
        properties.to_string(),
        "unnamed device, plugin libomptarget.rtl.x86_64.so"
    );
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}
