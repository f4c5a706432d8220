//! A runtime as a user builds and ends it: its devices, its plugins, image errors, leaks at drop, another runtime's buffers, device properties.

use super::*;

#[test]
fn the_default_runtime_has_host_devices_and_a_clean_shutdown() -> anyhow::Result<()> {
    let runtime = runtime();
    assert_eq!(runtime.device_count(), 4, "OMPTARGET_HOST_DEVICES default");
    let plugins = runtime.plugins();
    assert_eq!(plugins.len(), 1);
    assert!(plugins[0].built_in, "{plugins:?}");
    assert_eq!(plugins[0].name, "libomptarget.rtl.x86_64.so", "{plugins:?}");
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
                "runtime::a_dropped_runtime_warns_once_with_its_leaks",
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
