//! Real kernels (tests/kernels/*.c, compiled by clang-14) through the Rust
//! API on the host plugin, and the API's error cases.

use omptarget_test_support as support;

use omptarget::image::OwnedImage;
use omptarget::{
    Config, DeviceBuffer, Error, Image, Kernel, LaunchConfig, Phase, Ptr, PtrMut, Runtime,
    StepOutcome, TeardownStep,
};

/// `vec_add(const float *a, const float *b, float *c, intptr_t n)`.
type VecAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, isize);

fn host_runtime() -> (support::plugin::PluginCopy, Runtime) {
    let plugin = support::plugin::host_plugin();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime =
        Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).expect("runtime");
    assert!(
        runtime.skipped_plugins().is_empty(),
        "{:?}",
        runtime.skipped_plugins()
    );
    assert!(
        runtime.device_count() >= 2,
        "the host plugin offers several devices"
    );
    (plugin, runtime)
}

#[test]
fn vec_add_runs_and_shutdown_is_clean() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let n = 4099usize; // not a multiple of anything convenient
    let a: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
    let b: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    {
        let device = runtime.device(0)?;
        // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
        let image = unsafe {
            Image::load_file(
                device,
                support::clang::build_kernel_image("vec_add.c"),
                &["vec_add"],
            )
        }?;
        // SAFETY: vec_add's C signature; it touches n values of each buffer.
        let kernel: Kernel<VecAdd> = unsafe { image.kernel("vec_add")? };
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let mut dc = DeviceBuffer::<f32>::new(device, n)?;
        dc.copy_from_host(&vec![-1.0; n])?;
        // The host plugin runs one call per launch: 4 teams of 8 threads
        // are refused, not run once (LaunchConfig).
        // SAFETY: every length passed is at most its buffer's length.
        let refused = unsafe {
            kernel.launch_unchecked(LaunchConfig::teams(4, 8), (&da, &db, &mut dc, n as isize))
        };
        assert!(
            matches!(
                refused,
                Err(omptarget::Error::UnsupportedLaunch {
                    teams: 4,
                    threads: 8,
                    ..
                })
            ),
            "{refused:?}"
        );
        // SAFETY: every length passed is at most its buffer's length.
        unsafe {
            kernel.launch_unchecked(LaunchConfig::default(), (&da, &db, &mut dc, n as isize))
        }?;
        device.synchronize()?;
        let mut c = vec![0.0f32; n];
        dc.copy_to_host(&mut c)?;
        for i in 0..n {
            assert_eq!(c[i], a[i] + b[i], "element {i}");
        }
        assert_eq!(device.live_allocations().0, 3);
    }
    let device0 = runtime.device(0)?;
    assert_eq!(device0.live_allocations(), (0, 0), "buffers freed on drop");
    assert_eq!(device0.loaded_image_count(), 0, "image unloaded on drop");
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert!(report.user_leaks.is_empty());
    // Device 0 only was used: one step of each device phase, in order.
    let phases: Vec<Phase> = report.steps.iter().map(|s| s.phase()).collect();
    assert_eq!(
        phases,
        [
            Phase::DrainMemoryManagers,
            Phase::FreeUserAllocations,
            Phase::UnloadImages,
            Phase::DeinitDevices,
            Phase::DeinitPlugins,
            Phase::ClosePlugins
        ]
    );
    // 3 buffers of 4099 floats are over the 8 KiB threshold: not cached.
    assert!(matches!(
        report.steps[0],
        TeardownStep::DrainMemoryManager { blocks: 0, .. }
    ));
    println!("{report}");
    Ok(())
}

#[test]
fn image_with_two_kernels_and_scalar_arguments() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            support::clang::build_kernel_image("saxpy.c"),
            &["saxpy", "sum_i64"],
        )
    }?;
    assert_eq!(
        image.entry_names().collect::<Vec<_>>(),
        ["saxpy", "sum_i64"]
    );

    let n = 257usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y0: Vec<f32> = (0..n).map(|i| 2.0 * i as f32 + 1.0).collect();
    let dx = DeviceBuffer::from_slice(device, &x)?;
    let mut dy = DeviceBuffer::from_slice(device, &y0)?;
    // SAFETY: saxpy(uintptr_t a_bits, const float*, float*, intptr_t).
    let saxpy: Kernel<(usize, Ptr<f32>, PtrMut<f32>, isize)> = unsafe { image.kernel("saxpy")? };
    // SAFETY: every length passed is at most its buffer's length.
    unsafe {
        saxpy.launch_unchecked(
            LaunchConfig::default(),
            ((-1.5f32).to_bits() as usize, &dx, &mut dy, n as isize),
        )
    }?;
    let y = dy.to_vec()?;
    for i in 0..n {
        assert_eq!(y[i], -1.5 * x[i] + y0[i], "element {i}");
    }

    let values: Vec<i64> = (0..1000).map(|i| i * i - 500).collect();
    let dv = DeviceBuffer::from_slice(device, &values)?;
    let mut dsum = DeviceBuffer::<i64>::from_slice(device, &[0])?;
    // SAFETY: sum_i64(const int64_t*, intptr_t, int64_t*).
    let sum: Kernel<(Ptr<i64>, isize, PtrMut<i64>)> = unsafe { image.kernel("sum_i64")? };
    // SAFETY: every length passed is at most its buffer's length.
    unsafe {
        sum.launch_unchecked(
            LaunchConfig::single(),
            (&dv, values.len() as isize, &mut dsum),
        )
    }?;
    assert_eq!(dsum.to_vec()?, [values.iter().sum::<i64>()]);
    dsum.free()?;
    drop((dx, dy, dv));
    assert!(image.unload()?, "the host plugin unloads images");
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

#[test]
fn missing_kernels_and_bad_images_are_clear_errors() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(0)?;
    let so = support::clang::build_kernel_image("saxpy.c");

    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, &so, &["saxpy", "sum_i64"]) }?;
    // SAFETY: refused before any launch.
    match unsafe { image.kernel::<()>("daxpy") } {
        Err(Error::KernelNotFound { name, available }) => {
            assert_eq!(name, "daxpy");
            assert_eq!(available, ["saxpy", "sum_i64"]);
        }
        other => panic!("{other:?}"),
    }
    drop(image);

    // A name the object does not define: refused before the plugin sees it.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, &so, &["saxpy", "no_such_kernel"]) }.unwrap_err();
    assert!(
        matches!(err, Error::InvalidImage { device: 0, .. }),
        "{err}"
    );
    // Not an ELF object at all.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load(device, b"definitely not ELF", &["k"]) }.unwrap_err();
    assert!(matches!(err, Error::InvalidImage { .. }), "{err}");
    // An ELF object for the wrong machine is rejected by is_valid_binary.
    let mut elf = std::fs::read(&so)?;
    elf[18] = 0xb7; // e_machine = EM_AARCH64
                    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load(device, &elf, &["saxpy"]) }.unwrap_err();
    assert!(matches!(err, Error::InvalidImage { .. }), "{err}");
    // A missing file.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, "/nonexistent/kernel.so", &["k"]) }.unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");

    assert_eq!(device.loaded_image_count(), 0, "nothing stays loaded");
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// An object calling a function that exists nowhere: `Image::load` binds
/// every symbol at load (`__tgt_rtl_load_binary_flags` with `BIND_NOW`),
/// so it is refused naming the function, and nothing of it stays loaded.
/// The raw `Device::load_image` (the OpenMP layer's way, LLVM's
/// `load_binary`) still loads it lazily, and its kernel runs as long as it
/// does not take the call.
#[test]
fn an_image_calling_an_undefined_function_is_refused_at_load() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(0)?;
    let so = support::clang::build_kernel_image("calls_missing.c");

    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, &so, &["calls_missing"]) }.unwrap_err();
    match &err {
        Error::ImageLoadFailed {
            device: 0,
            reason: Some(reason),
            ..
        } => assert!(reason.contains("undefined symbol: missing_fn"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("undefined symbol: missing_fn"),
        "{err}"
    );
    assert_eq!(device.loaded_image_count(), 0, "nothing stays loaded");
    // Refused again on another device (the refusal left nothing behind).
    let bytes = std::fs::read(&so)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load(runtime.device(1)?, &bytes, &["calls_missing"]) }.unwrap_err();
    assert!(
        matches!(err, Error::ImageLoadFailed { device: 1, .. }),
        "{err}"
    );

    // The raw layer loads as LLVM's runtime does: lazily.
    let storage = OwnedImage::new(&bytes, &["calls_missing"]).map_err(anyhow::Error::msg)?;
    // SAFETY: `storage` outlives the load: it is unloaded below.
    let loaded = unsafe { device.load_image(storage.as_device_image())? };
    assert_eq!(loaded.entries.len(), 1);
    let mut flag: isize = 0;
    let cell = DeviceBuffer::from_slice(device, &[flag])?;
    let mut args = [cell.device_ptr().as_ptr()];
    // SAFETY: calls_missing(intptr_t *flag) gets one device pointer to an
    // intptr_t; with *flag == 0 it does not take the call.
    unsafe {
        device.run_region(
            loaded.entries[0].addr,
            &mut args,
            &mut [0],
            omptarget::RegionLaunch::Single,
        )?
    };
    cell.copy_to_host(std::slice::from_mut(&mut flag))?;
    assert_eq!(flag, 42, "the kernel ran");
    drop(cell);
    // SAFETY: loaded on this device just above.
    assert!(unsafe { device.unload_image(storage.as_device_image())? });
    assert_eq!(device.loaded_image_count(), 0);

    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert!(report.image_dtors.is_empty(), "{report}");
    Ok(())
}

#[test]
fn buffer_misuse_is_rejected_and_loses_nothing() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(0)?;
    let other = runtime.device(1)?;
    let mut buffer = DeviceBuffer::from_slice(device, &[1u32, 2, 3])?;
    assert!(matches!(
        buffer.copy_from_host(&[1, 2]),
        Err(Error::LengthMismatch {
            device_len: 3,
            host_len: 2
        })
    ));
    assert!(matches!(
        buffer.copy_to_host(&mut [0; 4]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(buffer.to_vec()?, [1, 2, 3], "content unchanged");
    // Empty buffers are fine (rust_user's `empty_buffers_work_everywhere`);
    // one larger than the address space is not.
    assert!(matches!(
        DeviceBuffer::<u64>::new(device, usize::MAX),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        runtime.device(999),
        Err(Error::InvalidDevice(999))
    ));

    // A buffer of device 0 passed to a kernel on device 1.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            other,
            support::clang::build_kernel_image("vec_add.c"),
            &["vec_add"],
        )
    }?;
    let mut dst = DeviceBuffer::<u32>::new(other, 3)?;
    type VecAddU32 = (Ptr<u32>, Ptr<u32>, PtrMut<u32>, isize);
    // SAFETY: vec_add's signature (with u32 for its floats: never runs,
    // the argument check fails first).
    let add: Kernel<VecAddU32> = unsafe { image.kernel("vec_add")? };
    // SAFETY: every length passed is at most its buffer's length.
    let err =
        unsafe { add.launch_unchecked(LaunchConfig::default(), (&buffer, &buffer, &mut dst, 3)) }
            .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");

    // Raw frees: unknown pointers and double frees are errors, and change nothing.
    // SAFETY: no host pointer; the raw block is this test's alone.
    let raw = unsafe { device.alloc(64, std::ptr::null_mut(), omptarget::abi::AllocKind::Device)? };
    // SAFETY: the test owns `raw`; the second free and the free of another
    // device's address are refused without touching memory.
    unsafe {
        device.free(raw)?;
        assert!(matches!(
            device.free(raw),
            Err(Error::UnknownDevicePointer { device: 0, .. })
        ));
        assert!(matches!(
            other.free(buffer.device_ptr()),
            Err(Error::UnknownDevicePointer { device: 1, .. })
        ));
    }
    assert_eq!(buffer.to_vec()?, [1, 2, 3]);
    buffer.copy_from_host(&[7, 8, 9])?;
    assert_eq!(buffer.to_vec()?, [7, 8, 9]);
    drop((buffer, dst, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

#[test]
fn shutdown_frees_and_reports_what_the_user_still_holds() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(0)?;
    let kept = DeviceBuffer::<u8>::new(device, 100)?;
    let kept_addr = kept.device_ptr().addr();
    std::mem::forget(kept);
    // SAFETY: no host pointer; left to the shutdown on purpose.
    let big = unsafe {
        device.alloc(
            1 << 20,
            std::ptr::null_mut(),
            omptarget::abi::AllocKind::Host,
        )?
    };
    let cached = DeviceBuffer::<u8>::new(device, 64)?;
    drop(cached); // into the memory manager's cache
    assert_eq!(device.memory_stats().cached_blocks, 1);
    // An image left loaded: through the raw API, with storage that
    // outlives the runtime (an Image handle cannot).
    let elf = std::fs::read(support::clang::build_kernel_image("vec_add.c"))?;
    let storage = OwnedImage::new(&elf, &["vec_add"]).map_err(anyhow::Error::msg)?;
    // SAFETY: `storage` is dropped only after the shutdown below.
    unsafe { device.load_image(storage.as_device_image())? };

    let report = runtime.shutdown();
    assert!(!report.is_clean());
    assert_eq!(report.user_leaks.len(), 2);
    assert_eq!(
        report.user_leaks.iter().map(|l| l.size).sum::<usize>(),
        100 + (1 << 20)
    );
    assert!(report.user_leaks.iter().any(|l| l.address == kept_addr));
    assert!(report.user_leaks.iter().any(|l| l.address == big.addr()));
    assert!(report.not_freed.is_empty(), "{report}");
    let steps: Vec<&TeardownStep> = report
        .steps
        .iter()
        .filter(|s| s.device() == Some(0))
        .collect();
    assert!(matches!(
        steps[0],
        TeardownStep::DrainMemoryManager {
            blocks: 1,
            bytes: 64,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        steps[1],
        TeardownStep::FreeUserAllocations {
            blocks: 2,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        steps[2],
        TeardownStep::UnloadImages {
            images: 1,
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert!(matches!(
        steps[3],
        TeardownStep::DeinitDevice {
            outcome: StepOutcome::Done,
            ..
        }
    ));
    assert_eq!(report.blocks_freed, 3);
    assert_eq!(report.bytes_freed, 64 + 100 + (1 << 20));
    let text = report.to_string();
    assert!(
        text.contains("still held by the user at shutdown"),
        "{text}"
    );
    drop(storage);
    Ok(())
}

#[test]
fn one_runtime_shared_by_threads() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let so = support::clang::build_kernel_image("vec_add.c");
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let runtime = &runtime;
            let so = &so;
            scope.spawn(move || -> anyhow::Result<()> {
                let device = runtime.device(t % 2)?;
                // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
                let image = unsafe { Image::load_file(device, so, &["vec_add"]) }?;
                // SAFETY: vec_add's signature; n-value buffers.
                let kernel: Kernel<VecAdd> = unsafe { image.kernel("vec_add")? };
                for round in 0..20usize {
                    let n = 16 + round;
                    let a: Vec<f32> = (0..n).map(|i| (i * t) as f32).collect();
                    let da = DeviceBuffer::from_slice(device, &a)?;
                    let mut dc = DeviceBuffer::<f32>::new(device, n)?;
                    // SAFETY: every length passed is at most its buffer's length.
                    unsafe {
                        kernel.launch_unchecked(
                            LaunchConfig::default(),
                            (&da, &da, &mut dc, n as isize),
                        )
                    }?;
                    let c = dc.to_vec()?;
                    assert!(c.iter().zip(&a).all(|(c, a)| *c == 2.0 * a));
                }
                Ok(())
            });
        }
    });
    for device in runtime.devices() {
        assert_eq!(device.live_allocations(), (0, 0));
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert!(report.blocks_freed > 0, "the cache held the small buffers");
    Ok(())
}

#[test]
fn device_to_device_exchange() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
    assert!(
        d0.can_exchange_with(d1),
        "the host plugin exchanges between its devices"
    );
    let src = DeviceBuffer::from_slice(d0, &[1.5f64, -2.0, 3.25])?;
    let dst = DeviceBuffer::<f64>::new(d1, 3)?;
    // SAFETY: both are live buffers of 24 bytes on their devices.
    unsafe { d0.exchange(src.device_ptr(), d1, dst.device_ptr(), src.size_bytes())? };
    d1.synchronize()?;
    assert_eq!(dst.to_vec()?, [1.5, -2.0, 3.25]);
    drop((src, dst));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A `const` global through the staged host plugin (here so that
/// `cargo xtask valgrind runtime_api` checks the refusal path too): the
/// write is refused with the typed error before any copy, the raw copy is
/// refused by the plugin (it would write read-only memory: SIGSEGV before,
/// an invalid write under valgrind), and the process goes on to a clean
/// shutdown. The API as a user meets it: tests/rust_user's
/// `a_const_global_is_read_only_and_writing_it_is_an_error`.
#[test]
fn a_const_global_write_is_refused_and_the_process_survives() -> anyhow::Result<()> {
    let (_plugin, runtime) = host_runtime();
    let device = runtime.device(0)?;
    let so = support::clang::build_kernel_image("typed.c");
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, &so, &["ro_val", "counter"]) }?;
    let ro_val = image.global::<i32>("ro_val")?;
    let err = ro_val.write(&42).unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnlyGlobal { device: 0, global } if global == "ro_val"),
        "{err}"
    );
    let value = 42i32;
    // SAFETY: `value` is readable for 4 bytes; the destination is the
    // plugin's to refuse.
    let err = unsafe { device.submit(ro_val.device_ptr(), (&value as *const i32).cast(), 4) }
        .unwrap_err();
    assert!(matches!(err, Error::PluginCallFailed { .. }), "{err}");
    assert_eq!(ro_val.read()?, 7);
    image.global::<i32>("counter")?.write(&1)?;
    drop(image);
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}
