//! Kernel launches: argument types, checks, bounds, launch configurations, OpenMP kernels.

use super::*;

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

/// What a raw thread got from a launch of `end_thread`: 1 when the launch
/// returned `Error::ThreadExiting` (the kernel ended its thread), 2 for
/// anything else.
extern "C" fn launch_end_thread(kernel: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    // SAFETY: the `Kernel` the test passes, alive until it joins this thread.
    let kernel = unsafe { &*(kernel as *const Kernel<(i64,)>) };
    // SAFETY: `end_thread` touches no memory.
    let outcome = unsafe { kernel.launch_unchecked(LaunchConfig::single(), (42i64,)) };
    let code: usize = if matches!(outcome, Err(Error::ThreadExiting)) {
        1
    } else {
        2
    };
    code as *mut std::ffi::c_void
}

extern "C" {
    fn pthread_create(
        thread: *mut std::ffi::c_ulong,
        attr: *const std::ffi::c_void,
        start: extern "C" fn(*mut std::ffi::c_void) -> *mut std::ffi::c_void,
        arg: *mut std::ffi::c_void,
    ) -> i32;
    fn pthread_join(thread: std::ffi::c_ulong, value: *mut *mut std::ffi::c_void) -> i32;
}

/// A kernel that calls `pthread_exit` on the built-in host plugin (called
/// natively: one interception, the backend's) ends nothing but its launch:
/// the launch returns `ThreadExiting` on that thread, the thread ends, and
/// the runtime goes on (another launch, then a clean shutdown).
#[test]
fn a_kernel_ending_its_thread_leaves_the_builtin_runtime_usable() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("thread_exit.c")?, &["end_thread"]) }?;
    // SAFETY: `void end_thread(int64_t)`.
    let end: Kernel<(i64,)> = unsafe { image.kernel("end_thread")? };
    // A raw pthread: std's threads wrap their closure in a panic boundary,
    // which the forced unwind of a pthread_exit must never meet.
    let mut thread = 0;
    let mut value = std::ptr::null_mut();
    // SAFETY: `end` outlives the thread (joined below); the start routine
    // has the signature pthread_create expects.
    unsafe {
        assert_eq!(
            pthread_create(
                &mut thread,
                std::ptr::null(),
                launch_end_thread,
                &end as *const _ as *mut _
            ),
            0
        );
        assert_eq!(pthread_join(thread, &mut value), 0);
    }
    assert_eq!(value as usize, 1, "the launch returned ThreadExiting");
    // The runtime and the device go on.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let typed = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { typed.kernel("scale")? };
    let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0])?;
    let mut y = DeviceBuffer::<f32>::new(device, 2)?;
    scale.launch(LaunchConfig::single(), (3.0f32, &x, &mut y))?;
    assert_eq!(y.to_vec()?, [3.0, 6.0]);
    drop((x, y, typed, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// The two kernels `launch_after_ignored_exit` launches.
struct EndThenCallBack<'a> {
    end: &'a Kernel<'a, (i64,)>,
    call_back: &'a Kernel<'a, (u64,)>,
}

extern "C" fn do_nothing() {}

/// A thread that is told `ThreadExiting` and goes on anyway (as a Rust
/// program may), then launches again: 1 when the first launch said
/// `ThreadExiting` and the second, whose kernel returns, succeeded.
extern "C" fn launch_after_ignored_exit(kernels: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    // SAFETY: the kernels the test passes, alive until it joins this thread.
    let kernels = unsafe { &*(kernels as *const EndThenCallBack<'_>) };
    // SAFETY: `end_thread` touches no memory.
    let first = unsafe {
        kernels
            .end
            .launch_unchecked(LaunchConfig::single(), (7i64,))
    };
    let f = do_nothing as extern "C" fn() as usize as u64;
    // SAFETY: `f` is a `void (*)(void)`; the kernel touches no memory.
    let second = unsafe {
        kernels
            .call_back
            .launch_unchecked(LaunchConfig::single(), (f,))
    };
    let code: usize = match (first, second) {
        (Err(Error::ThreadExiting), Ok(())) => 1,
        (Err(Error::ThreadExiting), Err(_)) => 2,
        _ => 3,
    };
    code as *mut std::ffi::c_void
}

/// An exit a caller was told of and went on past is not the next launch's:
/// a later launch on that thread whose kernel returns succeeds (it was
/// `ThreadExiting` again, for every launch of the thread, while the exit
/// stayed pending).
#[test]
fn a_launch_after_an_ignored_thread_exit_succeeds() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            kernel("thread_exit.c")?,
            &["end_thread", "call_back"],
        )
    }?;
    // SAFETY: `void end_thread(int64_t)`, `void call_back(uint64_t)`.
    let (end, call_back): (Kernel<(i64,)>, Kernel<(u64,)>) =
        unsafe { (image.kernel("end_thread")?, image.kernel("call_back")?) };
    let kernels = EndThenCallBack {
        end: &end,
        call_back: &call_back,
    };
    let mut thread = 0;
    let mut value = std::ptr::null_mut();
    // SAFETY: `kernels` outlives the thread (joined below); the start
    // routine has the signature pthread_create expects.
    unsafe {
        assert_eq!(
            pthread_create(
                &mut thread,
                std::ptr::null(),
                launch_after_ignored_exit,
                &kernels as *const _ as *mut _
            ),
            0
        );
        assert_eq!(pthread_join(thread, &mut value), 0);
    }
    assert_eq!(
        value as usize, 1,
        "1: ThreadExiting then Ok; 2: the second launch failed; 3: the first did not say ThreadExiting"
    );
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// The backtrace `record_frames` takes inside a kernel.
static FRAMES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Called by the `call_back` kernel: the frames from here down to `main`.
extern "C" fn record_frames() {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let frames = trace
        .lines()
        .filter_map(|line| {
            let (index, name) = line.trim_start().split_once(": ")?;
            index.parse::<usize>().ok().map(|_| name.to_owned())
        })
        .collect();
    *FRAMES.lock().unwrap_or_else(|e| e.into_inner()) = frames;
}

/// A launch on the built-in host plugin goes from the core to the backend
/// through Rust calls only: between `Device::run_typed_on` and the host
/// backend's `run_region` there is the native instance, and neither a C
/// entry of the plugin (`__tgt_rtl_*`) nor a panic boundary
/// (`catch_unwind`), which every C entry has. Before, the launch went
/// through the instance's `__tgt_rtl_run_typed_region` and its boundary.
#[test]
fn a_builtin_launch_reaches_the_backend_without_a_c_entry() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("thread_exit.c")?, &["call_back"]) }?;
    // SAFETY: `void call_back(uint64_t f)`, which calls `f` as a `void (*)(void)`.
    let call_back: Kernel<(u64,)> = unsafe { image.kernel("call_back")? };
    let f = record_frames as extern "C" fn() as usize as u64;
    // SAFETY: `f` is a `void (*)(void)`; the kernel touches no memory.
    unsafe { call_back.launch_unchecked(LaunchConfig::single(), (f,)) }?;
    let frames = std::mem::take(&mut *FRAMES.lock().unwrap_or_else(|e| e.into_inner()));
    let position = |what: &str| frames.iter().position(|f| f.contains(what));
    let (Some(backend), Some(core)) = (
        position("omptarget_plugin_host::launch::"),
        position("omptarget::device::queue_ops::<impl omptarget::device::Device>::run_typed_on"),
    ) else {
        panic!("the launch's frames are not named: {frames:#?}");
    };
    let between = &frames[backend..core];
    println!(
        "{} frames between Device::run_typed_on and the host backend's launch:\n{}",
        between.len(),
        between.join("\n")
    );
    assert!(
        between.iter().any(|f| f.contains("NativePlugin")),
        "{between:#?}"
    );
    assert!(
        !between
            .iter()
            .any(|f| f.contains("__tgt_rtl_") || f.contains("catch_unwind")),
        "{between:#?}"
    );
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}
