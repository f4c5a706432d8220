//! The Rust API as a user meets it: `omptarget` by path with its default
//! features, `Runtime::new(Config::default())`, no staged file, no
//! variable. Every rule of the API is a test here; the lifetime and
//! aliasing rules are `compile_fail` doctests in the crate itself.
use omptarget::{
    Config, DeviceBuffer, DeviceKind, Error, Image, Kernel, LaunchConfig, PinnedBuffer, Queue,
    Returned, Runtime, SkipReason, Slice, SliceMut,
};
use omptarget_user_tests::{kernel, openmp_kernel};

/// `void vec_add_slices(const float *a, size_t na, const float *b,
/// size_t nb, float *c, size_t nc)`: below all three lengths.
type VecAdd = (Slice<f32>, Slice<f32>, SliceMut<f32>);
/// `void scale(float a, const float *x, size_t nx, float *y, size_t ny)`:
/// below both lengths.
type Scale = (f32, Slice<f32>, SliceMut<f32>);

fn runtime() -> Runtime {
    Runtime::new(Config::default()).expect("the default runtime has the built-in host devices")
}

#[test]
fn the_default_runtime_has_host_devices_and_a_clean_shutdown() -> anyhow::Result<()> {
    let runtime = runtime();
    assert_eq!(runtime.device_count(), 4, "OMPTARGET_HOST_DEVICES default");
    let plugins = runtime.plugins();
    assert_eq!(plugins.len(), 1);
    assert!(plugins[0].name.contains("built-in host"), "{plugins:?}");
    let device = runtime.device(0)?;
    let buffer = DeviceBuffer::from_slice(device, &[1u8, 2, 3])?;
    assert_eq!(buffer.to_vec()?, [1, 2, 3]);
    drop(buffer);
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    // The same lifecycle as a plugin library: drain, deinit device,
    // deinit plugin, close (the built-in instance is given back).
    let text = report.to_string();
    for step in ["drain", "deinit device", "deinit plugin", "close plugin"] {
        assert!(text.contains(step), "{step}: {text}");
    }
    Ok(())
}

/// `cargo test` runs tests on parallel threads, each with its own runtime:
/// each gets devices and its own lifecycle.
#[test]
fn runtimes_on_parallel_threads_each_get_their_own_devices() -> anyhow::Result<()> {
    let so = kernel("vec_add.c")?;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|t| {
                let so = &so;
                scope.spawn(move || -> anyhow::Result<()> {
                    let runtime = runtime();
                    assert_eq!(runtime.device_count(), 4);
                    let device = runtime.device(t % 4)?;
                    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
                    let image = unsafe { Image::load_file(device, so, &["vec_add_slices"]) }?;
                    // SAFETY: `VecAdd` is its signature; it stays below
                    // the lengths it is given.
                    let add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
                    let a: Vec<f32> = (0..100).map(|i| (i * t) as f32).collect();
                    let da = DeviceBuffer::from_slice(device, &a)?;
                    let mut dc = DeviceBuffer::<f32>::new(device, 100)?;
                    add.launch(LaunchConfig::default(), (&da, &da, &mut dc))?;
                    let c = dc.to_vec()?;
                    assert!(c.iter().zip(&a).all(|(c, a)| *c == 2.0 * a));
                    drop((da, dc, image));
                    let report = runtime.shutdown();
                    assert!(report.is_clean(), "{report}");
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("no panic")?;
        }
        Ok(())
    })
}

#[test]
fn asked_for_plugins_that_all_fail_make_new_fail_with_each_reason() {
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let config = unsafe {
        Config::default().with_plugins([
            "/nonexistent/libomptarget.rtl.cuda.so",
            "/also/missing/libomptarget.rtl.x86_64.so",
        ])
    };
    let err = Runtime::new(config).unwrap_err();
    let Error::NoPluginLoaded { tried } = &err else {
        panic!("{err}");
    };
    assert_eq!(tried.len(), 2);
    assert!(tried
        .iter()
        .all(|t| matches!(t.reason, SkipReason::OpenFailed(_))));
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/libomptarget.rtl.cuda.so: cannot open"),
        "{text}"
    );
    assert!(text.contains("No such file"), "{text}");
}

#[test]
fn image_errors_carry_the_reason() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // The loader's reason for refusing the object.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, kernel("needs_missing.c")?, &["reads_missing"]) }
        .unwrap_err();
    assert!(matches!(err, Error::ImageLoadFailed { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("undefined symbol: omptarget_no_such_variable"),
        "{text}"
    );
    // A call of a function that exists nowhere: bound at load, so refused
    // here rather than ending the process at the first launch.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, kernel("calls_missing.c")?, &["calls_missing"]) }
        .unwrap_err();
    assert!(matches!(err, Error::ImageLoadFailed { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("undefined symbol: missing_fn"), "{text}");
    // A name the object does not define.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load_file(device, kernel("vec_add.c")?, &["vec_sub"]) }.unwrap_err();
    assert!(
        err.to_string()
            .contains("defines no symbol named \"vec_sub\""),
        "{err}"
    );
    // Not an ELF object.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let err = unsafe { Image::load(device, b"not an object", &["k"]) }.unwrap_err();
    assert!(matches!(err, Error::InvalidImage { .. }), "{err}");
    assert_eq!(device.loaded_image_count(), 0, "nothing stays loaded");
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn every_c_scalar_type_reaches_its_parameter() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scalars", "scale"]) }?;
    type Scalars = (
        i8,
        u8,
        i16,
        u16,
        i32,
        u32,
        i64,
        u64,
        f32,
        f64,
        SliceMut<f64>,
    );
    // SAFETY: the C signature is exactly `Scalars`; it writes 10 values,
    // only if the length it is given allows.
    let scalars: Kernel<Scalars> = unsafe { image.kernel("scalars")? };
    let mut out = DeviceBuffer::<f64>::new(device, 10)?;
    scalars.launch(
        LaunchConfig::single(),
        (
            -5i8,
            250u8,
            -30000i16,
            65000u16,
            -2_000_000_000i32,
            4_000_000_000u32,
            -(1i64 << 40),
            1u64 << 52,
            2.5f32,
            -0.125f64,
            &mut out,
        ),
    )?;
    assert_eq!(
        out.to_vec()?,
        [
            -5.0,
            250.0,
            -30000.0,
            65000.0,
            -2e9,
            4e9,
            -(2f64.powi(40)),
            2f64.powi(52),
            2.5,
            -0.125
        ]
    );

    // A float scalar in front of pointers (it travels in an SSE register).
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0, 3.0])?;
    let mut y = DeviceBuffer::<f32>::new(device, 3)?;
    scale.launch(LaunchConfig::teams(1, 1), (2.0f32, &x, &mut y))?;
    assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0]);
    drop((out, x, y, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn globals_have_typed_handles_and_are_not_kernels() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            kernel("typed.c")?,
            &["counter", "table", "bump", "sum_table"],
        )
    }?;
    // A global refused as a kernel, a kernel refused as a global.
    // SAFETY: refused before anything runs.
    let err = unsafe { image.kernel::<()>("counter") }.unwrap_err();
    assert!(
        err.to_string().contains("global variable of 4 bytes"),
        "{err}"
    );
    assert!(image.global::<i32>("bump").is_err());
    assert!(image.global::<i64>("counter").is_err(), "size checked");

    let counter = image.global::<i32>("counter")?;
    assert_eq!(counter.read()?, 41);
    // SAFETY: bump(int32_t) touches only the global.
    let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
    bump.launch(LaunchConfig::single(), (2,))?;
    assert_eq!(counter.read()?, 43);
    counter.write(&-7)?;
    assert_eq!(counter.read()?, -7);

    let table = image.global::<[f64; 4]>("table")?;
    table.write(&[10.0, 20.0, 30.0, 40.5])?;
    // SAFETY: sum_table(double *out, size_t n) writes out[0] if n >= 1.
    let sum: Kernel<(SliceMut<f64>,)> = unsafe { image.kernel("sum_table")? };
    let mut out = DeviceBuffer::<f64>::new(device, 1)?;
    sum.launch(LaunchConfig::single(), (&mut out,))?;
    assert_eq!(out.to_vec()?, [100.5]);
    drop((out, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A `const` global lies in the image's read-only memory (`ro_val` in
/// `.rodata`, `ro_name` in the `PT_GNU_RELRO` part): writing it from safe
/// code used to end the process with SIGSEGV in the host plugin's copy.
/// It is refused with a typed error, nothing is written, the raw copy to
/// its address is refused by the plugin too, and the process goes on.
#[test]
fn a_const_global_is_read_only_and_writing_it_is_an_error() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            kernel("typed.c")?,
            &["ro_val", "ro_name", "ro_get", "counter"],
        )
    }?;
    let ro_val = image.global::<i32>("ro_val")?;
    assert!(ro_val.is_read_only());
    assert_eq!(ro_val.read()?, 7, "reading a const global is fine");
    let err = ro_val.write(&42).unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnlyGlobal { device: 0, global } if global == "ro_val"),
        "{err}"
    );
    assert_eq!(ro_val.read()?, 7, "nothing was written");

    let ro_name = image.global::<usize>("ro_name")?;
    assert!(ro_name.is_read_only(), "relocated const data is read-only");
    let name_ptr = ro_name.read()?;
    let err = ro_name.write(&0).unwrap_err();
    assert!(matches!(err, Error::ReadOnlyGlobal { .. }), "{err}");
    assert_eq!(ro_name.read()?, name_ptr);

    // The raw copy (the OpenMP layer's `target update to`) is refused by
    // the plugin itself, whole or in part.
    let value = [42i32; 2];
    for (dst, size) in [(ro_val.device_ptr(), 4), (ro_val.device_ptr(), 8)] {
        // SAFETY: `value` is readable for `size` bytes; the destination is
        // the plugin's to refuse.
        let err = unsafe { device.submit(dst, value.as_ptr().cast(), size) }.unwrap_err();
        assert!(matches!(err, Error::PluginCallFailed { .. }), "{err}");
        assert!(err.to_string().contains("read-only memory"), "{err}");
    }
    assert_eq!(ro_val.read()?, 7);

    // The kernel still sees the values, and a writable global stays so.
    // SAFETY: ro_get(int32_t *out, size_t n) writes out[0..2] if n >= 2.
    let get: Kernel<(SliceMut<i32>,)> = unsafe { image.kernel("ro_get")? };
    let mut out = DeviceBuffer::<i32>::new(device, 2)?;
    get.launch(LaunchConfig::single(), (&mut out,))?;
    assert_eq!(out.to_vec()?, [7, i32::from(b'r')]);
    let counter = image.global::<i32>("counter")?;
    assert!(!counter.is_read_only());
    counter.write(&5)?;
    assert_eq!(counter.read()?, 5);
    drop((out, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn launch_checks_devices_and_the_plugin_reports_its_failures() -> anyhow::Result<()> {
    let runtime = runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(d1, kernel("vec_add.c")?, &["vec_add_slices"]) }?;
    // SAFETY: vec_add's signature; never runs (the device check fails).
    let add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
    let on_d0 = DeviceBuffer::from_slice(d0, &[1.0f32; 4])?;
    let mut out = DeviceBuffer::<f32>::new(d1, 4)?;
    let err = add
        .launch(LaunchConfig::default(), (&on_d0, &on_d0, &mut out))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is a buffer on device 0; the kernel runs on device 1"),
        "{err}"
    );
    drop((on_d0, out, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn views_device_to_device_and_fill() -> anyhow::Result<()> {
    let runtime = runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(2)?);
    let mut a = DeviceBuffer::from_slice(d0, &[0u16, 1, 2, 3, 4, 5, 6, 7])?;
    a.slice_mut(6..)?.copy_from_host(&[60, 70])?;
    let mut middle = [0u16; 3];
    a.slice(2..5)?.copy_to_host(&mut middle)?;
    assert_eq!(middle, [2, 3, 4]);
    // Out of range: an error, and nothing changed.
    assert!(a.slice_mut(7..9).is_err());
    assert!(a.slice(usize::MAX..).is_err());
    assert!(matches!(
        a.slice_mut(7..)?.copy_from_host(&[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(a.to_vec()?, [0, 1, 2, 3, 4, 5, 60, 70]);
    // Two halves written independently.
    let (low, mut high) = a.split_at_mut(4)?;
    high.fill(1)?;
    assert_eq!(low.to_vec()?, [0, 1, 2, 3]);
    assert_eq!(a.to_vec()?, [0, 1, 2, 3, 1, 1, 1, 1]);
    a.slice_mut(4..)?.copy_from_host(&[4, 5, 60, 70])?;

    // Same device, then across devices, then a sub-range.
    let mut same = DeviceBuffer::<u16>::new(d0, 8)?;
    same.copy_from(&a)?;
    let mut other = DeviceBuffer::<u16>::new(d1, 8)?;
    other.copy_from(&same)?;
    assert_eq!(other.to_vec()?, [0, 1, 2, 3, 4, 5, 60, 70]);
    other.fill(9)?;
    other.slice_mut(1..4)?.copy_from(a.slice(5..8)?)?;
    assert_eq!(other.to_vec()?, [9, 5, 60, 70, 9, 9, 9, 9]);
    assert!(other.slice_mut(6..9).is_err(), "past the end");
    assert!(matches!(
        other.copy_from(&DeviceBuffer::<u16>::new(d0, 3)?),
        Err(Error::LengthMismatch { .. })
    ));

    // A fill larger than the staging chunk.
    let mut big = DeviceBuffer::<u64>::new(d1, 300_000)?;
    big.fill(u64::MAX - 1)?;
    assert!(big.to_vec()?.iter().all(|&v| v == u64::MAX - 1));
    drop((a, same, other, big));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn a_queue_pipeline_across_two_devices_with_events() -> anyhow::Result<()> {
    let runtime = runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
    let so = kernel("typed.c")?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image0 = unsafe { Image::load_file(d0, &so, &["scale"]) }?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image1 = unsafe { Image::load_file(d1, &so, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale0: Kernel<Scale> = unsafe { image0.kernel("scale")? };
    // SAFETY: as above.
    let scale1: Kernel<Scale> = unsafe { image1.kernel("scale")? };
    let n = 1000;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut output = vec![0f32; n];
    let mut x0 = DeviceBuffer::<f32>::new(d0, n)?;
    let mut y0 = DeviceBuffer::<f32>::new(d0, n)?;
    let mut x1 = DeviceBuffer::<f32>::new(d1, n)?;
    let mut y1 = DeviceBuffer::<f32>::new(d1, n)?;
    omptarget::scope(|s| {
        let q0 = s.queue(d0)?;
        let q1 = s.queue(d1)?;
        let (x0, y0) = (s.bind(&mut x0), s.bind(&mut y0));
        let (x1, y1) = (s.bind(&mut x1), s.bind(&mut y1));
        q0.copy_from_host(x0, &input)?;
        q0.launch(&scale0, LaunchConfig::default(), (2.0f32, x0, y0))?;
        q0.copy_from(x1, y0)?; // device 0 -> device 1
        let copied = q0.record_event()?;
        q1.wait_for(&copied)?;
        q1.launch(&scale1, LaunchConfig::default(), (0.5f32, x1, y1))?;
        q1.copy_to_host(y1, &mut output)?;
        Ok(())
    })?;
    // 2 * 0.5 = 1: the pipeline ran, in order, and the scope waited.
    assert_eq!(output, input);
    drop((x0, y0, x1, y1, image0, image1));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn a_panicking_scope_still_waits_and_loses_nothing() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let buffer = DeviceBuffer::from_slice(device, &[5u32; 64])?;
    let mut host = vec![0u32; 64];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        omptarget::scope(|s| -> omptarget::Result<()> {
            let queue = s.queue(device)?;
            queue.copy_to_host(&buffer, &mut host)?;
            panic!("the program panics with a copy queued");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(
        host, [5; 64],
        "the queued copy completed before the unwind went on"
    );
    // Queue errors: a buffer of another device.
    let mut other = DeviceBuffer::<u32>::new(runtime.device(1)?, 64)?;
    let err = omptarget::scope(|s| s.queue(device)?.copy_from_host(&mut other, &host)).unwrap_err();
    assert!(
        err.to_string()
            .contains("is on device 1, the queue on device 0"),
        "{err}"
    );
    drop((buffer, other));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A runtime dropped without `shutdown` says so once on stderr (no
/// variable needed), with what the program leaked. Checked in a child
/// process (this binary, re-run) to read its stderr.
#[test]
fn a_dropped_runtime_warns_once_with_its_leaks() -> anyhow::Result<()> {
    if std::env::var_os("OMPTARGET_USER_TEST_DROP_CHILD").is_some() {
        let runtime = Runtime::new(Config::from_env())?;
        std::mem::forget(DeviceBuffer::<u8>::new(runtime.device(0)?, 100)?);
        drop(runtime);
        return Ok(());
    }
    for debug in ["0", "1"] {
        let out = std::process::Command::new(std::env::current_exe()?)
            .args([
                "--exact",
                "a_dropped_runtime_warns_once_with_its_leaks",
                "--nocapture",
            ])
            .env("OMPTARGET_USER_TEST_DROP_CHILD", "1")
            .env("LIBOMPTARGET_DEBUG", debug)
            .output()?;
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let warnings = stderr
            .lines()
            .filter(|l| l.contains("dropped without shutdown"))
            .collect::<Vec<_>>();
        assert_eq!(warnings.len(), 1, "LIBOMPTARGET_DEBUG={debug}:\n{stderr}");
        assert!(
            warnings[0].contains("the program never freed 1 allocations (100 bytes)"),
            "{}",
            warnings[0]
        );
    }
    Ok(())
}

/// Device numbers repeat across runtimes (each has a device 0): a buffer of
/// another runtime is refused by identity, not by number.
#[test]
fn buffers_of_another_runtime_are_refused() -> anyhow::Result<()> {
    let (first, second) = (runtime(), runtime());
    let (d_first, d_second) = (first.device(0)?, second.device(0)?);
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(d_first, kernel("vec_add.c")?, &["vec_add_slices"]) }?;
    // SAFETY: vec_add's signature; never runs (refused first).
    let add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
    let foreign = DeviceBuffer::from_slice(d_second, &[1.0f32; 4])?;
    let mut out = DeviceBuffer::<f32>::new(d_first, 4)?;
    let err = add
        .launch(LaunchConfig::default(), (&foreign, &foreign, &mut out))
        .unwrap_err();
    assert!(
        err.to_string().contains("device 0 of another runtime"),
        "{err}"
    );
    let mut host = vec![0f32; 4];
    let err =
        omptarget::scope(|s| s.queue(d_first)?.copy_to_host(&foreign, &mut host)).unwrap_err();
    assert!(err.to_string().contains("of another runtime"), "{err}");
    // Copies check the runtime as launches do, blocking and queued.
    let err = out.copy_from(&foreign).unwrap_err();
    assert!(
        err.to_string()
            .contains("the source is a buffer on device 0 of another runtime"),
        "{err}"
    );
    let mut mine = DeviceBuffer::<f32>::new(d_first, 4)?;
    let err = omptarget::scope(|s| {
        let q = s.queue(d_first)?;
        let theirs = s.bind(&mut mine);
        q.copy_from(theirs, &out)?;
        s.queue(d_first)?.copy_from(theirs, theirs)
    })
    .unwrap_err();
    assert!(err.to_string().contains("overlap"), "{err}");
    drop((image, foreign, out, mine));
    assert!(first.shutdown().is_clean());
    assert!(second.shutdown().is_clean());
    Ok(())
}

#[test]
fn global_handles_on_several_threads_are_serialised() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(3)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["table"]) }?;
    std::thread::scope(|s| {
        for t in 0..4 {
            let image = &image;
            s.spawn(move || -> anyhow::Result<()> {
                let table = image.global::<[f64; 4]>("table")?;
                for i in 0..200 {
                    let v = (t * 1000 + i) as f64;
                    table.write(&[v; 4])?;
                    let read = table.read()?;
                    // Whole values only: never a mix of two writers.
                    assert!(read.iter().all(|x| *x == read[0]), "{read:?}");
                }
                Ok(())
            });
        }
    });
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A launch queued in a scope keeps its image's globals from the host
/// until its queue is synchronised: reading or writing one meanwhile is an
/// error, never a race with a kernel that may still run.
#[test]
fn globals_are_refused_while_a_queued_launch_is_pending() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, kernel("typed.c")?, &["bump", "counter", "table"]) }?;
    // SAFETY: `void bump(int32_t by)` touches only `counter`, whatever it holds.
    let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
    let counter = image.global::<i32>("counter")?;
    let table = image.global::<[f64; 4]>("table")?;
    let mut long_lived = device.queue()?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        counter.write(&0)?; // nothing queued yet
        q.launch(&bump, LaunchConfig::single(), (5,))?;
        let err = counter.write(&100).unwrap_err();
        assert!(
            matches!(&err, Error::LaunchesPending { global, queues: 1 } if global == "counter"),
            "{err}"
        );
        assert!(err.to_string().contains("synchronise the queue"), "{err}");
        // Every global of the image, reads too.
        assert!(matches!(table.read(), Err(Error::LaunchesPending { .. })));
        // A second queue with a launch: both must be synchronised.
        let attached = s.attach(&mut long_lived);
        attached.launch(&bump, LaunchConfig::single(), (1,))?;
        q.synchronize()?;
        assert!(matches!(
            counter.read(),
            Err(Error::LaunchesPending { queues: 1, .. })
        ));
        attached.synchronize()?;
        assert_eq!(counter.read()?, 6, "both launches ran, the write did not");
        counter.write(&10)?;
        // Pending again until the end of the scope, which synchronises.
        attached.launch(&bump, LaunchConfig::single(), (1,))?;
        assert!(counter.read().is_err());
        Ok(())
    })?;
    assert_eq!(counter.read()?, 11);
    // A scope whose closure fails releases the globals too.
    let err = omptarget::scope(|s| {
        s.queue(device)?
            .launch(&bump, LaunchConfig::single(), (1,))?;
        Err::<(), _>(Error::InvalidArgument("the closure fails".into()))
    })
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(counter.read()?, 12);
    drop((long_lived, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// Blocking launches on several threads and host accesses to the image's
/// globals on others exclude each other: no access ever sees a kernel in
/// progress (`busy` non-zero), and none is lost.
#[test]
fn blocking_launches_and_global_accesses_on_several_threads_exclude_each_other(
) -> anyhow::Result<()> {
    const LAUNCHERS: u64 = 2;
    const LAUNCHES: u64 = 200;
    let runtime = runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, kernel("typed.c")?, &["busy_run", "busy", "runs"]) }?;
    // SAFETY: `void busy_run(uint64_t spins)` touches only `busy` and
    // `runs`, with atomics, whatever they hold.
    let busy_run: Kernel<(u64,)> = unsafe { image.kernel("busy_run")? };
    let busy = image.global::<i32>("busy")?;
    let runs = image.global::<i64>("runs")?;
    let launched = std::sync::atomic::AtomicU64::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let accesses = std::thread::scope(|s| {
        let launchers: Vec<_> = (0..LAUNCHERS)
            .map(|_| {
                s.spawn(|| -> omptarget::Result<()> {
                    for _ in 0..LAUNCHES {
                        busy_run.launch(LaunchConfig::single(), (20_000,))?;
                        launched.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Ok(())
                })
            })
            .collect();
        let accessors: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> omptarget::Result<u64> {
                    let mut accesses = 0;
                    loop {
                        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                        // Never inside a run ...
                        assert_eq!(busy.read()?, 0, "read while a kernel ran");
                        // ... so writing 0 loses nothing of one.
                        busy.write(&0)?;
                        let before = launched.load(std::sync::atomic::Ordering::SeqCst);
                        assert!(runs.read()? >= before as i64);
                        accesses += 1;
                        if finished {
                            return Ok(accesses);
                        }
                    }
                })
            })
            .collect();
        for launcher in launchers {
            launcher.join().expect("no panic")?;
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        accessors
            .into_iter()
            .map(|a| a.join().expect("no panic"))
            .sum::<omptarget::Result<u64>>()
    })?;
    assert!(accesses >= 2);
    assert_eq!(busy.read()?, 0);
    assert_eq!(runs.read()?, (LAUNCHERS * LAUNCHES) as i64);
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn a_reversed_source_range_is_an_error() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let src = DeviceBuffer::from_slice(device, &[1u8, 2, 3, 4, 5, 6])?;
    let mut dst = DeviceBuffer::from_slice(device, &[0u8; 6])?;
    #[allow(clippy::reversed_empty_ranges)]
    let err = src.slice(5..2).unwrap_err();
    assert!(
        err.to_string().contains("is not within the buffer"),
        "{err}"
    );
    dst.copy_from(&src)?;
    dst.fill(0)?;
    assert_eq!(dst.to_vec()?, [0; 6]);
    drop((src, dst));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// The launch a new user wrote that corrupted the heap (a length larger
/// than the buffers) cannot be written safely any more (a `compile_fail`
/// doctest on `Kernel`); its bounded form gets each buffer's own length,
/// so unequal buffers are safe: the kernel stops at the shorter one.
#[test]
fn a_bounded_launch_stays_within_unequal_buffers() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0, 3.0, 4.0])?;
    let mut y = DeviceBuffer::from_slice(device, &[0.0f32; 2])?;
    scale.launch(LaunchConfig::default(), (2.0f32, &x, &mut y))?;
    assert_eq!(y.to_vec()?, [2.0, 4.0]);
    let mut long = DeviceBuffer::from_slice(device, &[-1.0f32; 64])?;
    scale.launch(LaunchConfig::default(), (3.0f32, &x, &mut long))?;
    let values = long.to_vec()?;
    assert_eq!(values[..4], [3.0, 6.0, 9.0, 12.0]);
    assert!(
        values[4..].iter().all(|v| *v == -1.0),
        "nothing past x's 4 values"
    );
    drop((x, y, long, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A lent buffer is `Copy` inside its scope, so the same one can be passed
/// as a kernel's input and output: every launch checks that a buffer the
/// kernel writes is not passed again, queued as blocking.
#[test]
fn a_written_buffer_passed_twice_to_a_queued_launch_is_refused() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut y = DeviceBuffer::from_slice(device, &[1.0f32; 8])?;
    let x = DeviceBuffer::from_slice(device, &[1.0f32; 8])?;
    let err = omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut y);
        // Reading one buffer and writing another is fine.
        q.launch(&scale, LaunchConfig::default(), (2.0f32, &x, lent))?;
        q.launch(&scale, LaunchConfig::default(), (2.0f32, lent, lent))
    })
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(
        err.to_string()
            .contains("arguments 1 and 2 of kernel scale overlap and the kernel may write 2"),
        "{err}"
    );
    assert_eq!(
        y.to_vec()?,
        [2.0; 8],
        "the first launch ran, the second did not"
    );
    drop((x, y, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// Generic code needs no special case for empty input: an empty buffer is
/// made, copied, filled, launched and freed like any other, allocates
/// nothing and leaks nothing.
#[test]
fn empty_buffers_work_everywhere() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let empty: &[f32] = &[];
    let x = DeviceBuffer::from_slice(device, empty)?;
    let mut y = DeviceBuffer::<f32>::new(device, 0)?;
    assert!(x.is_empty() && y.is_empty());
    assert_eq!(device.live_allocations().0, 0, "nothing allocated");
    y.fill(1.0)?;
    y.copy_from_host(empty)?;
    y.copy_from(&x)?;
    assert_eq!(y.to_vec()?, Vec::<f32>::new());
    let mut back: Vec<f32> = Vec::new();
    x.copy_to_host(&mut back)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    scale.launch(LaunchConfig::default(), (2.0f32, &x, &mut y))?;
    let mut z = DeviceBuffer::<f32>::new(device, 0)?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let (lent_y, lent_z) = (s.bind(&mut y), s.bind(&mut z));
        q.copy_from_host(lent_y, empty)?;
        q.copy_from(lent_z, lent_y)?;
        q.launch(&scale, LaunchConfig::default(), (1.0f32, &x, lent_y))?;
        q.copy_to_host(lent_z, &mut back)
    })?;
    // Zero-sized values: any number of them, still nothing allocated.
    let units = DeviceBuffer::from_slice(device, &[[0u8; 0]; 5])?;
    assert_eq!(units.len(), 5);
    assert_eq!(units.to_vec()?.len(), 5);
    units.free()?;
    drop((x, y, z, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// A pipeline object as a user writes one: a long-lived queue and its
/// buffers in a struct, moved to another thread, fed through scopes; its
/// events time it; views are launch arguments.
struct Pipeline<'rt> {
    queue: Queue<'rt>,
    x: DeviceBuffer<'rt, f32>,
    y: DeviceBuffer<'rt, f32>,
}

impl Pipeline<'_> {
    fn run(&mut self, scale: &Kernel<'_, Scale>, input: &[f32]) -> omptarget::Result<Vec<f32>> {
        let mut output = vec![0.0; input.len()];
        let (queue, x, y) = (&mut self.queue, &mut self.x, &mut self.y);
        omptarget::scope(|s| {
            let q = s.attach(queue);
            let (x, y) = (s.bind(x), s.bind(y));
            q.copy_from_host(x, input)?;
            q.fill(y, -1.0)?;
            // Only the first half is scaled: a view as the output.
            q.launch(
                scale,
                LaunchConfig::default(),
                (2.0f32, x, y.slice(..input.len() / 2)?),
            )?;
            q.copy_to_host(y, &mut output)?;
            Ok(())
        })?;
        Ok(output)
    }
}

#[test]
fn a_long_lived_queue_in_a_struct_runs_on_another_thread() -> anyhow::Result<()> {
    fn send<T: Send>(_: &T) {}
    let runtime = runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut pipeline = Pipeline {
        queue: Queue::new(device)?,
        x: DeviceBuffer::new(device, 4)?,
        y: DeviceBuffer::new(device, 4)?,
    };
    send(&pipeline.queue);
    let first = pipeline.run(&scale, &[1.0, 2.0, 3.0, 4.0])?;
    assert_eq!(first, [2.0, 4.0, -1.0, -1.0]);
    let mut pipeline = std::thread::scope(|t| {
        t.spawn(move || -> omptarget::Result<Pipeline<'_>> {
            assert_eq!(pipeline.run(&scale, &[5.0; 4])?, [10.0, 10.0, -1.0, -1.0]);
            Ok(pipeline)
        })
        .join()
        .expect("no panic")
    })?;
    // Events order and time the queue between scopes (the host plugin
    // completes work before an event is recorded: the time is exact).
    let start = pipeline.queue.record_event()?;
    std::thread::sleep(std::time::Duration::from_millis(20));
    let end = pipeline.queue.record_event()?;
    end.synchronize()?;
    assert!(end.elapsed_since(&start)? >= std::time::Duration::from_millis(20));
    let mut other = device.queue()?;
    other.wait_for(&end)?;
    drop((start, end, other, pipeline, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// Outside a scope a long-lived queue copies owned buffers only: it holds
/// both sides until `wait` gives them back, and gives them back with the
/// error when it refuses a copy.
#[test]
fn a_long_lived_queue_holds_owned_buffers_until_waited_for() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    let mut queue = device.queue()?;
    let staging = PinnedBuffer::from_slice(device, &[1u32, 2, 3, 4])?;
    let upload = queue
        .copy_from_host(DeviceBuffer::new(device, 4)?, staging)
        .map_err(Error::from)?;
    let (buffer, staging) = queue.wait(upload)?;
    assert_eq!(buffer.to_vec()?, [1, 2, 3, 4]);
    // Into a Vec and a boxed slice; two copies in flight, waited out of order.
    let mut other = DeviceBuffer::from_slice(device, &[9u32; 4])?;
    other.fill(5)?;
    let first = queue
        .copy_to_host(buffer, vec![0u32; 4])
        .map_err(Error::from)?;
    let second = queue
        .copy_to_host(other, vec![0u32; 4].into_boxed_slice())
        .map_err(Error::from)?;
    let (other, boxed) = queue.wait(second)?;
    let (buffer, values) = queue.wait(first)?;
    assert_eq!((values, &boxed[..]), (vec![1, 2, 3, 4], &[5u32; 4][..]));

    // Refused copies give the buffers back, unchanged.
    let Returned {
        error,
        buffers: (buffer, short),
    } = queue
        .copy_from_host(buffer, vec![7u32; 3])
        .expect_err("lengths differ");
    assert!(
        matches!(
            error,
            Error::LengthMismatch {
                device_len: 4,
                host_len: 3
            }
        ),
        "{error:?}"
    );
    assert_eq!((buffer.to_vec()?, short), (vec![1, 2, 3, 4], vec![7; 3]));
    let Returned {
        error,
        buffers: (elsewhere, staging),
    } = queue
        .copy_to_host(DeviceBuffer::<u32>::new(runtime.device(3)?, 4)?, staging)
        .expect_err("another device");
    assert!(
        error
            .to_string()
            .contains("is on device 3, the queue on device 2"),
        "{error}"
    );
    assert_eq!(staging[..], [1, 2, 3, 4]);

    // A receipt is redeemed on its own queue only.
    let mut second_queue = device.queue()?;
    let receipt = queue
        .copy_from_host(buffer, vec![0u32; 4])
        .map_err(Error::from)?;
    let err = second_queue.wait(receipt).unwrap_err();
    assert!(err.to_string().contains("another queue"), "{err}");
    // A receipt never redeemed: the queue drops what it holds when it is
    // dropped, after synchronising; nothing leaks.
    let unredeemed = queue
        .copy_to_host(other, vec![0u32; 4])
        .map_err(Error::from)?;
    drop((unredeemed, queue, second_queue, elsewhere, staging, boxed));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// A queue never dropped is synchronised and freed by the shutdown, and
/// reported as the user's leak.
#[test]
fn a_forgotten_queue_is_reported_and_freed() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let mut queue = device.queue()?;
    queue.synchronize()?;
    std::mem::forget(queue);
    drop(device.queue()?); // dropped: not a leak
    let report = runtime.shutdown();
    assert_eq!(report.leaked_queues.len(), 1, "{report}");
    assert!(!report.is_clean());
    assert!(
        report.to_string().contains("queues never dropped"),
        "{report}"
    );
    Ok(())
}

/// What a cudarc user looks for first: which device this is and how much
/// memory it has, from the plugin (the built-in host plugin: the machine).
#[test]
fn device_properties_come_from_the_plugin() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(1)?;
    let properties = device.properties()?;
    assert_eq!(properties.kind, Some(DeviceKind::HostCpu));
    // The CPU's model name, as /proc/cpuinfo says.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map(|(_, name)| name.trim().to_owned());
    assert_eq!(properties.name, model, "{properties:?}");
    let total = properties.total_memory.expect("the machine's memory");
    let free = properties.free_memory.expect("its available memory");
    assert!(total > 0 && free <= total, "{properties:?}");
    // One launch runs one team of one thread there (see LaunchConfig).
    assert_eq!(
        (properties.max_teams, properties.max_threads),
        (Some(1), Some(1))
    );
    assert_eq!(properties.plugin_name, device.plugin_name());
    assert_eq!(properties.plugin_path, device.plugin().path());
    let text = properties.to_string();
    assert!(
        text.contains("(host CPU)") && text.contains("GiB free"),
        "{text}"
    );
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// The host plugin runs a plain C kernel as one call on the calling
/// thread, so a launch asking for more teams or threads is refused before
/// it runs rather than run once; what it can honour runs once per launch.
#[test]
fn launch_configs_the_host_cannot_honour_are_refused() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, kernel("typed.c")?, &["scale", "bump", "counter"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    // SAFETY: `void bump(int32_t by)` touches only its global.
    let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
    let counter = image.global::<i32>("counter")?;
    let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0])?;
    let mut y = DeviceBuffer::from_slice(device, &[0.0f32; 2])?;
    for refused in [
        LaunchConfig::teams(100, 0),
        LaunchConfig::teams(0, 8),
        LaunchConfig::teams(4, 4),
    ] {
        let err = scale.launch(refused, (2.0f32, &x, &mut y)).unwrap_err();
        let Error::UnsupportedLaunch {
            max_teams,
            max_threads,
            ..
        } = &err
        else {
            panic!("{refused:?}: {err}");
        };
        assert_eq!((*max_teams, *max_threads), (Some(1), Some(1)));
        assert!(err.to_string().contains("cannot honour"), "{err}");
        assert!(bump.launch(refused, (1,)).is_err());
    }
    let err = scale
        .launch(LaunchConfig::teams(100, 0), (2.0f32, &x, &mut y))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "cannot honour LaunchConfig::teams(100, 0): one launch there runs at most 1 teams \
             of at most 1 threads each"
        ),
        "{err}"
    );
    assert_eq!(y.to_vec()?, [0.0; 2], "nothing ran");
    assert_eq!(counter.read()?, 41, "nothing ran");
    // Queued launches are checked the same way.
    let err = omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut y);
        q.launch(&scale, LaunchConfig::teams(2, 0), (2.0f32, &x, lent))
    })
    .unwrap_err();
    assert!(
        matches!(err, Error::UnsupportedLaunch { teams: 2, .. }),
        "{err}"
    );
    // What it can honour runs the body once per launch.
    for once in [
        LaunchConfig::default(),
        LaunchConfig::teams(0, 0),
        LaunchConfig::teams(1, 1),
        LaunchConfig::single(),
    ] {
        bump.launch(once, (1,))?;
    }
    assert_eq!(counter.read()?, 45, "four launches, four calls");
    scale.launch(LaunchConfig::teams(1, 0), (2.0f32, &x, &mut y))?;
    assert_eq!(y.to_vec()?, [2.0, 4.0]);
    drop((x, y, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A `-fopenmp` kernel: one call per launch, in which its own pragmas
/// start the OpenMP runtime's threads; the launch's teams and threads do
/// not reach them, so asking for more than one is refused here too.
#[test]
fn an_openmp_kernel_starts_its_own_threads_inside_one_call() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            openmp_kernel("openmp_scale.c")?,
            &["openmp_scale", "openmp_calls"],
        )
    }?;
    type OpenmpScale = (f32, Slice<f32>, SliceMut<f32>, SliceMut<i32>);
    // SAFETY: its C signature; it stays below the lengths it is given.
    let kernel: Kernel<OpenmpScale> = unsafe { image.kernel("openmp_scale")? };
    let n = 10_000;
    let x = DeviceBuffer::from_slice(device, &vec![1.5f32; n])?;
    let mut y = DeviceBuffer::<f32>::new(device, n)?;
    let mut threads = DeviceBuffer::from_slice(device, &[0i32])?;
    kernel.launch(LaunchConfig::default(), (2.0f32, &x, &mut y, &mut threads))?;
    assert!(y.to_vec()?.iter().all(|v| *v == 3.0));
    assert!(threads.to_vec()?[0] >= 1);
    let err = kernel
        .launch(
            LaunchConfig::teams(8, 0),
            (2.0f32, &x, &mut y, &mut threads),
        )
        .unwrap_err();
    assert!(matches!(err, Error::UnsupportedLaunch { .. }), "{err}");
    assert_eq!(image.global::<i32>("openmp_calls")?.read()?, 1);
    drop((x, y, threads, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// Pinned host memory from the plugin: a slice on the host, the host side
/// of every copy, freed on drop, and a leak when forgotten.
#[test]
fn pinned_buffers_are_host_slices_owned_through_the_plugin() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    let mut pinned = PinnedBuffer::<u32>::new(device, 1000)?;
    assert_eq!(pinned.len(), 1000);
    assert!(pinned.iter().all(|v| *v == 0), "zeroed");
    for (i, v) in pinned.iter_mut().enumerate() {
        *v = i as u32;
    }
    // A live allocation of the host kind, on its device.
    assert_eq!(device.live_allocations(), (1, 4000));
    // The host side of blocking copies ...
    let mut buffer = DeviceBuffer::<u32>::new(device, 1000)?;
    buffer.copy_from_host(&pinned)?;
    let mut back = PinnedBuffer::<u32>::new(device, 1000)?;
    buffer.copy_to_host(&mut back)?;
    assert_eq!(back[..], pinned[..]);
    // ... and of queued ones.
    let mut out = PinnedBuffer::<u32>::new(device, 1000)?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut buffer);
        q.copy_from_host(lent, &back)?;
        q.copy_to_host(lent, &mut out)
    })?;
    assert_eq!(out[999], 999);
    let from = PinnedBuffer::from_slice(device, &[1.5f64, 2.5])?;
    assert_eq!(from[..], [1.5, 2.5]);
    // Empty ones allocate nothing.
    let empty = PinnedBuffer::<f32>::new(device, 0)?;
    assert!(empty.is_empty() && empty[..].is_empty());
    empty.free()?;
    from.free()?;
    drop((pinned, back, out, buffer));
    assert_eq!(device.live_allocations(), (0, 0));
    // A forgotten one is freed at shutdown and reported.
    std::mem::forget(PinnedBuffer::<u8>::new(device, 64)?);
    let report = runtime.shutdown();
    assert_eq!(report.user_leaks.len(), 1, "{report}");
    assert_eq!(report.user_leaks[0].size, 64);
    assert_eq!(report.user_leaks[0].kind, omptarget::abi::AllocKind::Host);
    assert!(report.not_freed.is_empty(), "freed at shutdown: {report}");
    Ok(())
}

/// Edges a review found: an empty view inside a buffer the kernel writes
/// overlaps nothing; a pinned buffer of zero-sized values keeps its length.
#[test]
fn empty_views_and_zero_sized_pinned_values() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut y = DeviceBuffer::from_slice(device, &[1.0f32; 4])?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut y);
        q.launch(
            &scale,
            LaunchConfig::default(),
            (2.0f32, lent.slice(2..2)?, lent),
        )
    })?;
    assert_eq!(y.to_vec()?, [1.0; 4], "an empty input scales nothing");
    let units = PinnedBuffer::<[u8; 0]>::new(device, 5)?;
    assert_eq!(units.len(), 5);
    drop((y, units, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}
