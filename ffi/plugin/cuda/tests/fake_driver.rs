//! The CUDA plugin against a fake driver (`tests/fake_cuda/`, built from
//! `fake_cuda.c` and `fake_cuda_module.c`:
//! a `libcuda.so.1` on host memory that records every call and checks
//! CUDA's ordering rules), through the Rust runtime.
//!
//! Each test runs its scenario in a child process (`cuda::run_child`):
//! the parent builds the fake driver, points `LD_LIBRARY_PATH` at it and
//! reads the driver's log and the child's output afterwards.
use omptarget::{
    Config, DeviceBuffer, DeviceKind, Error, Image, Kernel, LaunchConfig, PinnedBuffer, PtrMut,
    Runtime,
};
use omptarget_test_support::cuda;
use omptarget_test_support::cuda::{first, last, log_lines, Sym};
use std::path::Path;

/// A runtime with the CUDA plugin only.
fn cuda_runtime() -> Runtime {
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    Runtime::new(unsafe { Config::default().with_plugins([cuda::cuda_plugin()]) }).unwrap()
}

fn run(name: &str, log: &Path, env: &[(&str, &str)]) -> (String, String, Vec<String>) {
    let dir = cuda::fake_driver_dir(&[]);
    let log_s = log.to_str().unwrap();
    let mut all = vec![("FAKE_CUDA_LOG", log_s)];
    all.extend_from_slice(env);
    let out = cuda::run_child(name, &dir, &all);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = cuda::child_stderr(&out);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    (stdout, stderr, log_lines(log))
}

fn no_violations(lines: &[String]) {
    let bad: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("VIOLATION"))
        .collect();
    assert!(bad.is_empty(), "the driver saw rule violations: {bad:#?}");
}

#[test]
fn shutdown_releases_everything_in_the_documented_order() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let image = unsafe {
            Image::load(
                device,
                &cuda::test_cubin(90),
                &["spmd_kernel", "generic_kernel", "counter"],
            )
        }
        .unwrap();
        // The global starts as the image says, and round-trips.
        let counter = image.global::<i32>("counter").unwrap();
        assert_eq!(counter.read().unwrap(), 7);
        counter.write(&11).unwrap();
        assert_eq!(counter.read().unwrap(), 11);
        let mut data = DeviceBuffer::from_slice(device, &[1i32, 2, 3, 4]).unwrap();
        // SAFETY: the fake driver runs no code; the signature is the test's.
        let spmd: Kernel<(PtrMut<i32>, i32)> = unsafe { image.kernel("spmd_kernel").unwrap() };
        // SAFETY: as above.
        let generic: Kernel<(PtrMut<i32>, i32)> =
            unsafe { image.kernel("generic_kernel").unwrap() };
        // SAFETY: every length passed is at most its buffer's length.
        unsafe { spmd.launch_unchecked(LaunchConfig::teams(4, 64), (&mut data, 4)) }.unwrap();
        // SAFETY: every length passed is at most its buffer's length.
        unsafe { generic.launch_unchecked(LaunchConfig::teams(2, 64), (&mut data, 4)) }.unwrap();
        // SAFETY: every length passed is at most its buffer's length.
        unsafe { spmd.launch_unchecked(LaunchConfig::single(), (&mut data, 4)) }.unwrap();
        // Queued work on a stream of its own, synchronised by the scope.
        let mut back = vec![0i32; 4];
        omptarget::scope(|s| -> omptarget::Result<()> {
            let q = s.queue(device)?;
            let d = s.bind(&mut data);
            q.copy_from_host(d, &[5, 6, 7, 8])?;
            // SAFETY: every length passed is at most its buffer's length.
            unsafe { q.launch_unchecked(&spmd, LaunchConfig::teams(1, 32), (d, 4)) }?;
            // A second queue waits for the first on the device (an event).
            let q2 = s.queue(device)?;
            let ready = q.record_event()?;
            q2.wait_for(&ready)?;
            q2.copy_to_host(d, &mut back)?;
            Ok(())
        })
        .unwrap();
        assert_eq!(back, [5, 6, 7, 8]);
        // A long-lived queue's events, timed on the device.
        let mut queue = device.queue().unwrap();
        let start = queue.record_event().unwrap();
        let end = queue.record_event().unwrap();
        println!("ELAPSED {:?}", end.elapsed_since(&start).unwrap());
        drop((start, end, queue));
        // A device-to-device copy, a host and a shared allocation.
        let mut other = DeviceBuffer::<i32>::new(device, 4).unwrap();
        other.copy_from(&data).unwrap();
        assert_eq!(other.to_vec().unwrap(), [5, 6, 7, 8]);
        // Left for shutdown: `data`, `other` and the image, still live.
        std::mem::forget((data, other, image));
        let report = runtime.shutdown();
        println!("REPORT\n{report}");
        return;
    }
    let log = cuda::log_path("order");
    let (stdout, stderr, lines) = run(
        "shutdown_releases_everything_in_the_documented_order",
        &log,
        &[],
    );
    assert!(stderr.trim().is_empty(), "unexpected stderr: {stderr}");
    no_violations(&lines);
    // Launch geometry: SPMD takes the clause; generic adds a warp; a plain
    // region is one team of one thread.
    assert!(lines
        .iter()
        .any(|l| l.starts_with("cuLaunchKernel spmd_kernel grid=4,1,1 block=64,1,1")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("cuLaunchKernel generic_kernel grid=2,1,1 block=96,1,1")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("cuLaunchKernel spmd_kernel grid=1,1,1 block=1,1,1")));
    // The device environment was written at load: a copy right after the
    // global lookup.
    let env = first(&lines, "cuModuleGetGlobal_v2 __omp_rtl_device_environment").unwrap();
    assert!(lines[env..]
        .iter()
        .take(6)
        .any(|l| l.starts_with("cuMemcpyHtoDAsync_v2 48")));
    // Events: created, recorded on one stream, waited for on another.
    let record = first(&lines, "cuEventRecord").expect("an event was recorded");
    let wait = first(&lines, "cuStreamWaitEvent").expect("a queue waited for it");
    assert!(first(&lines, "cuEventCreate").unwrap() < record && record < wait);
    assert!(first(&lines, "cuEventDestroy_v2").is_some());
    // Events are created with timing (flags 0) and measured by the driver.
    assert!(lines.iter().any(|l| l == "cuEventCreate 0"), "{lines:#?}");
    assert!(first(&lines, "cuEventElapsedTime").is_some());
    assert!(stdout.contains("ELAPSED "), "{stdout}");
    // The runtime's order (DESIGN.md, "Teardown order"): memory managers and user blocks
    // first, then images, then the device (the plugin synchronises,
    // destroys its streams and releases the context last).
    let free = last(&lines, "cuMemFree_v2").unwrap();
    let unload = last(&lines, "cuModuleUnload").unwrap();
    let sync = last(&lines, "cuCtxSynchronize").unwrap();
    let streams = last(&lines, "cuStreamDestroy_v2").unwrap();
    let release = last(&lines, "cuDevicePrimaryCtxRelease_v2").unwrap();
    let destroyed = first(&lines, "CONTEXT_DESTROYED 0").unwrap();
    assert!(
        free < unload && unload < sync && sync < streams && streams < release,
        "order: free {free}, unload {unload}, sync {sync}, streams {streams}, release {release}\n{lines:#?}"
    );
    assert_eq!(destroyed, release + 1);
    // Every retain paired with a release, nothing left at exit.
    let retains = lines
        .iter()
        .filter(|l| l.starts_with("cuDevicePrimaryCtxRetain"))
        .count();
    let releases = lines
        .iter()
        .filter(|l| l.starts_with("cuDevicePrimaryCtxRelease_v2"))
        .count();
    assert_eq!((retains, releases), (1, 1));
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
    // Nothing touches the context after it is gone.
    assert!(lines[destroyed + 1..].iter().all(|l| l.starts_with("EXIT")));
    // The report lists the steps.
    for step in [
        "2. free user allocations  device 0 (libomptarget.rtl.cuda.so): 2 blocks, 32 bytes: ok",
        "3. unload images          device 0 (libomptarget.rtl.cuda.so): 1 images: ok",
        "4. deinit device          device 0 (libomptarget.rtl.cuda.so): ok",
        "5. deinit plugin          libomptarget.rtl.cuda.so: ok",
    ] {
        assert!(stdout.contains(step), "{step} missing from:\n{stdout}");
    }
}

#[test]
fn out_of_memory_makes_the_memory_manager_free_its_cache_and_retry() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        let blocks: Vec<_> = (0..3)
            .map(|_| DeviceBuffer::<u8>::new(device, 1024).unwrap())
            .collect();
        drop(blocks);
        assert_eq!(device.memory_stats().cached_bytes, 3072);
        // 3072 cached + 2048 > 4096 (whole size classes): the driver says
        // out of memory, the cache goes back, the retry succeeds.
        let big = DeviceBuffer::<u8>::new(device, 2048).unwrap();
        assert_eq!(device.memory_stats().cached_blocks, 0);
        drop(big);
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        return;
    }
    let log = cuda::log_path("oom");
    let (_, stderr, lines) = run(
        "out_of_memory_makes_the_memory_manager_free_its_cache_and_retry",
        &log,
        &[("FAKE_CUDA_MEM_LIMIT", "4096")],
    );
    no_violations(&lines);
    let oom = first(&lines, "OOM cuMemAlloc_v2 2048").expect("an out-of-memory answer");
    let frees = lines[oom..]
        .iter()
        .take_while(|l| !l.starts_with("cuMemAlloc_v2"))
        .filter(|l| l.starts_with("cuMemFree_v2"))
        .count();
    assert_eq!(frees, 3, "{lines:#?}");
    let retry = oom
        + 1
        + lines[oom + 1..]
            .iter()
            .position(|l| l.starts_with("cuMemAlloc_v2 2048"))
            .unwrap();
    assert!(lines[retry + 1].starts_with("ALLOCATED"), "{lines:#?}");
    // The runtime recovered: nothing printed (the failed try is a debug line).
    assert!(stderr.trim().is_empty(), "{stderr}");
    assert!(lines
        .last()
        .unwrap()
        .starts_with("EXIT contexts=0 allocations=0"));
}

#[test]
fn a_failing_cu_init_means_no_devices_and_a_debug_line() {
    if cuda::in_child() {
        let runtime = Runtime::new(
            // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
            unsafe { Config::default().with_plugins([cuda::host_plugin(), cuda::cuda_plugin()]) }
                .with_require_a_plugin(false),
        )
        .unwrap();
        println!("DEVICES {}", runtime.device_count());
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        return;
    }
    for debug in ["0", "1"] {
        let log = cuda::log_path(&format!("init{debug}"));
        let (stdout, stderr, lines) = run(
            "a_failing_cu_init_means_no_devices_and_a_debug_line",
            &log,
            &[
                ("FAKE_CUDA_INIT_ERROR", "100"),
                ("OMPTARGET_PLUGIN_DEBUG", debug),
            ],
        );
        assert!(stdout.contains("DEVICES 4"), "{stdout}");
        // The only calls: cuInit (after cudarc's presence check opened and
        // closed the library once, which logs an EXIT line).
        assert!(
            lines
                .iter()
                .all(|l| !l.starts_with("cu") || l == "cuInit 0"),
            "{lines:#?}"
        );
        assert!(first(&lines, "cuInit").is_some());
        assert!(first(&lines, "cuDevicePrimaryCtxRetain").is_none());
        let line =
            "the CUDA driver is unusable, cuInit failed: CUDA_ERROR_NO_DEVICE (100): 0 devices";
        if debug == "1" {
            assert!(stderr.contains(line), "{stderr}");
        } else {
            assert!(!stderr.contains("cuda"), "printed without debug: {stderr}");
        }
    }
}

#[test]
fn a_driver_missing_a_symbol_means_no_devices_and_a_debug_line() {
    if cuda::in_child() {
        let runtime = Runtime::new(
            // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
            unsafe { Config::default().with_plugins([cuda::cuda_plugin()]) }
                .with_require_a_plugin(false),
        )
        .unwrap();
        println!("DEVICES {}", runtime.device_count());
        let _ = runtime.shutdown();
        return;
    }
    let dir = cuda::fake_driver_dir(&["-DFAKE_OMIT_MODULE_UNLOAD"]);
    let log = cuda::log_path("symbol");
    let out = cuda::run_child(
        "a_driver_missing_a_symbol_means_no_devices_and_a_debug_line",
        &dir,
        &[
            ("FAKE_CUDA_LOG", log.to_str().unwrap()),
            ("OMPTARGET_PLUGIN_DEBUG", "1"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = cuda::child_stderr(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("DEVICES 0"), "{stdout}");
    assert!(
        stderr.contains("the CUDA driver lacks cuModuleUnload"),
        "{stderr}"
    );
    // Not even cuInit: the symbols are checked first.
    assert!(log_lines(&log).iter().all(|l| !l.starts_with("cu")));
}

#[test]
fn no_driver_means_no_devices_silence_and_exit_0() {
    if cuda::in_child() {
        let runtime = Runtime::new(
            // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
            unsafe { Config::default().with_plugins([cuda::host_plugin(), cuda::cuda_plugin()]) },
        )
        .unwrap();
        println!("DEVICES {}", runtime.device_count());
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        println!("REPORT\n{report}");
        return;
    }
    let out = cuda::run_child(
        "no_driver_means_no_devices_silence_and_exit_0",
        &cuda::empty_dir(),
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = cuda::child_stderr(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The host plugin's 4 devices, none from CUDA, and not a word.
    assert!(stdout.contains("DEVICES 4"), "{stdout}");
    assert!(stdout.contains("libomptarget.rtl.cuda.so"), "{stdout}");
    assert!(stderr.trim().is_empty(), "printed: {stderr}");
}

#[test]
fn an_image_for_another_architecture_is_refused_with_the_reason() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        // sm_80 does not run on the fake sm_90 device (another major).
        let sm80 = cuda::cubin(80, &[Sym::Function("k")]);
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let err = unsafe { Image::load(device, &sm80, &["k"]) }
            .unwrap_err()
            .to_string();
        println!("ERROR {err}");
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        return;
    }
    let log = cuda::log_path("arch");
    let (stdout, _, lines) = run(
        "an_image_for_another_architecture_is_refused_with_the_reason",
        &log,
        &[],
    );
    // The runtime asks is_valid_binary first: the plugin says no (its
    // debug line says why), so the image never reaches the driver.
    assert!(
        stdout.contains("ERROR image rejected by device 0"),
        "{stdout}"
    );
    assert!(first(&lines, "cuModuleLoadData").is_none(), "{lines:#?}");
    no_violations(&lines);
}

#[test]
fn two_devices_exchange_data_and_release_both_contexts() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        assert_eq!(runtime.device_count(), 2);
        let (d0, d1) = (runtime.device(0).unwrap(), runtime.device(1).unwrap());
        let a = DeviceBuffer::from_slice(d0, &[1u32, 2, 3, 4]).unwrap();
        let mut b = DeviceBuffer::<u32>::new(d1, 4).unwrap();
        // Across devices: the plugin's peer copy.
        b.copy_from(&a).unwrap();
        assert_eq!(b.to_vec().unwrap(), [1, 2, 3, 4]);
        // An image unloaded while the runtime lives: its module goes then.
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let image = unsafe { Image::load(d1, &cuda::test_cubin(90), &["spmd_kernel"]) }.unwrap();
        assert!(image.unload().unwrap());
        drop((a, b));
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        return;
    }
    let log = cuda::log_path("two");
    let (_, stderr, lines) = run(
        "two_devices_exchange_data_and_release_both_contexts",
        &log,
        &[("FAKE_CUDA_DEVICES", "2")],
    );
    assert!(stderr.trim().is_empty(), "{stderr}");
    no_violations(&lines);
    assert!(
        first(&lines, "cuMemcpyPeerAsync 16").is_some(),
        "{lines:#?}"
    );
    let unload = first(&lines, "cuModuleUnload").unwrap();
    let first_release = first(&lines, "cuDevicePrimaryCtxRelease_v2").unwrap();
    assert!(
        unload < first_release,
        "unloaded at Image::unload, not at shutdown"
    );
    for device in ["0", "1"] {
        assert!(
            lines.contains(&format!("CONTEXT_DESTROYED {device}")),
            "{lines:#?}"
        );
    }
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

#[test]
fn a_plugin_destroyed_before_the_runtime_is_never_called_again() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let image =
            unsafe { Image::load(device, &cuda::test_cubin(90), &["spmd_kernel"]) }.unwrap();
        let live = DeviceBuffer::<u8>::new(device, 4096).unwrap();
        std::mem::forget((live, image));
        // What the plugin library's safety net does when it goes away
        // while initialised (the seed: LLVM 14 then freed through it).
        device.plugin().invoke_destruction_callback();
        let log = std::env::var("FAKE_CUDA_LOG").unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
        std::io::Write::write_all(&mut f, b"MARK destroyed\n").unwrap();
        let report = runtime.shutdown();
        println!("REPORT\n{report}");
        return;
    }
    let log = cuda::log_path("destroyed");
    let (stdout, _, lines) = run(
        "a_plugin_destroyed_before_the_runtime_is_never_called_again",
        &log,
        &[],
    );
    no_violations(&lines);
    let mark = first(&lines, "MARK destroyed").unwrap();
    // Not one driver call after the plugin was destroyed: what it held is
    // left to the driver, and the report says so.
    assert!(
        lines[mark + 1..].iter().all(|l| l.starts_with("EXIT")),
        "{:#?}",
        &lines[mark..]
    );
    assert!(
        stdout.contains("4. deinit device          device 0 (libomptarget.rtl.cuda.so): plugin already destroyed, not called"),
        "{stdout}"
    );
    assert!(stdout.contains("4096 bytes"), "{stdout}");
}

#[test]
fn device_constructors_run_at_load_and_destructors_before_each_unload() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        let cubin = cuda::cubin_with_ctors_and_dtors(true);
        // Unloaded by the user: its destructors run in `unload_binary`.
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let first = unsafe { Image::load(device, &cubin, &["spmd_kernel"]) }.unwrap();
        println!("LOADED first");
        drop(first);
        println!("DROPPED first");
        // Left loaded: the teardown's step 3 unloads it.
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let second = unsafe { Image::load(device, &cubin, &["spmd_kernel"]) }.unwrap();
        std::mem::forget(second);
        println!("REPORT\n{}", runtime.shutdown());
        return;
    }
    let log = cuda::log_path("ctor_dtor");
    let (stdout, stderr, lines) = run(
        "device_constructors_run_at_load_and_destructors_before_each_unload",
        &log,
        &[],
    );
    assert!(stderr.trim().is_empty(), "unexpected stderr: {stderr}");
    no_violations(&lines);
    let calls: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("DEVICE_") || l.starts_with("cuModuleUnload"))
        .map(|l| l.trim_end())
        .collect();
    let image = [
        "DEVICE_CTOR 0xa1",
        "DEVICE_CTOR 0xc3",
        "DEVICE_CTOR 0xb2",
        "DEVICE_DTOR 0xe2",
        "DEVICE_DTOR 0xd1",
        "cuModuleUnload",
    ];
    assert_eq!(calls, [image, image].concat(), "{lines:#?}");
    // Constructors after the device environment is written; one thread.
    let env = first(&lines, "cuModuleGetGlobal_v2 __omp_rtl_device_environment").unwrap();
    let init = first(&lines, "cuLaunchKernel nvptx$device$init").unwrap();
    assert!(env < init, "{lines:#?}");
    assert!(
        lines[init].contains("grid=1,1,1 block=1,1,1"),
        "{}",
        lines[init]
    );
    // The second image's destructors ran in step 3, before the device was
    // released; the arrays were freed (nothing alive at exit).
    let dtor = last(&lines, "DEVICE_DTOR").unwrap();
    assert!(dtor < last(&lines, "cuDevicePrimaryCtxRelease_v2").unwrap());
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
    assert!(
        stdout.contains(
            "2 device destructors (nvptx$device$fini)): destructors run by unload_binary"
        ),
        "{stdout}"
    );
}

#[test]
fn an_image_whose_constructors_cannot_run_is_refused_and_left_unloaded() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        // The init kernel without the array bounds it reads.
        let cubin = cuda::cubin_with_ctors_and_dtors(false);
        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let Err(err) = (unsafe { Image::load(device, &cubin, &["spmd_kernel"]) }) else {
            panic!("an image whose constructors cannot run was loaded");
        };
        println!("ERROR {err}");
        let report = runtime.shutdown();
        assert!(report.is_clean(), "{report}");
        return;
    }
    let log = cuda::log_path("ctor_fail");
    let (stdout, _, lines) = run(
        "an_image_whose_constructors_cannot_run_is_refused_and_left_unloaded",
        &log,
        &[],
    );
    no_violations(&lines);
    assert!(
        stdout.contains("device constructors (nvptx$device$init)")
            && stdout.contains("__init_array_start"),
        "{stdout}"
    );
    assert!(first(&lines, "DEVICE_CTOR").is_none(), "{lines:#?}");
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

/// What a cudarc user looks for, through the CUDA plugin: the device's
/// name and memory (`cuDeviceGetName`, `cuDeviceTotalMem`, `cuMemGetInfo`
/// in its context), page-locked host buffers (`cuMemAllocHost`), and
/// launches run as asked (grid = teams, block = threads) or refused.
#[test]
fn properties_pinned_buffers_and_launch_limits() {
    if cuda::in_child() {
        let runtime = cuda_runtime();
        let device = runtime.device(0).unwrap();
        let properties = device.properties().unwrap();
        assert_eq!(properties.name.as_deref(), Some("Fake GPU 0"));
        assert_eq!(properties.kind, Some(DeviceKind::CudaGpu));
        assert_eq!(properties.total_memory, Some(1 << 30));
        assert_eq!(
            properties.free_memory,
            Some(1 << 30),
            "nothing allocated yet"
        );
        assert_eq!(properties.max_teams, Some(i32::MAX as u64));
        assert_eq!(properties.max_threads, Some(1024));
        assert_eq!(properties.plugin_name, "libomptarget.rtl.cuda.so");
        // Device memory counts against free memory; pinned host memory not.
        let mut buffer = DeviceBuffer::<u32>::new(device, 1 << 20).unwrap();
        let mut pinned = PinnedBuffer::<u32>::new(device, 1 << 20).unwrap();
        let free = device.properties().unwrap().free_memory.unwrap();
        assert_eq!(free, (1 << 30) - (4 << 20));
        for (i, v) in pinned.iter_mut().enumerate() {
            *v = i as u32;
        }
        buffer.copy_from_host(&pinned).unwrap();
        let mut back = PinnedBuffer::<u32>::new(device, 1 << 20).unwrap();
        omptarget::scope(|s| {
            let q = s.queue(device)?;
            let lent = s.bind(&mut buffer);
            q.copy_to_host(lent, &mut back)
        })
        .unwrap();
        assert_eq!(back[12345], 12345);
        drop(back);
        // Forgotten: freed at shutdown with cuMemFreeHost, and reported.
        std::mem::forget(pinned);

        // SAFETY: a test cubin: loading and unloading it runs no host code.
        let image = unsafe {
            Image::load(
                device,
                &cuda::test_cubin(90),
                &["spmd_kernel", "generic_kernel"],
            )
        }
        .unwrap();
        // SAFETY: the fake driver runs no code; the signature is the test's.
        let spmd: Kernel<(PtrMut<i32>, i32)> = unsafe { image.kernel("spmd_kernel").unwrap() };
        // SAFETY: as above.
        let generic: Kernel<(PtrMut<i32>, i32)> =
            unsafe { image.kernel("generic_kernel").unwrap() };
        let mut data = DeviceBuffer::from_slice(device, &[0i32; 4]).unwrap();
        // SAFETY: the fake driver runs no code.
        unsafe { spmd.launch_unchecked(LaunchConfig::teams(3, 1024), (&mut data, 4)) }.unwrap();
        // Above the device's block: refused before the plugin is called.
        // SAFETY: the fake driver runs no code.
        let err = unsafe { spmd.launch_unchecked(LaunchConfig::teams(1, 2048), (&mut data, 4)) }
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::UnsupportedLaunch {
                    threads: 2048,
                    max_threads: Some(1024),
                    ..
                }
            ),
            "{err}"
        );
        // Within the device's block, but a generic kernel's main warp makes
        // it 1056: the plugin refuses it rather than clamp it.
        // SAFETY: the fake driver runs no code.
        let err = unsafe { generic.launch_unchecked(LaunchConfig::teams(1, 1024), (&mut data, 4)) }
            .unwrap_err();
        let Error::PluginCallFailed { reason, .. } = &err else {
            panic!("{err}");
        };
        let reason = reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("1024 threads per team cannot be honoured")
                && reason.contains("at most 992"),
            "{err}"
        );
        drop((data, image, buffer));
        let report = runtime.shutdown();
        assert_eq!(report.user_leaks.len(), 1, "{report}");
        assert_eq!(report.user_leaks[0].kind, omptarget::abi::AllocKind::Host);
        println!("REPORT\n{report}");
        return;
    }
    let log = cuda::log_path("properties");
    let (_, stderr, lines) = run("properties_pinned_buffers_and_launch_limits", &log, &[]);
    no_violations(&lines);
    assert!(first(&lines, "cuMemGetInfo_v2").is_some(), "{lines:#?}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("cuMemAllocHost_v2"))
            .count(),
        2
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("cuMemFreeHost"))
            .count(),
        2,
        "the forgotten one too"
    );
    // Exactly what was asked; the refused launches never reached the driver.
    let launches: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("cuLaunchKernel"))
        .collect();
    assert_eq!(launches.len(), 1, "{launches:#?}");
    assert!(
        launches[0].starts_with("cuLaunchKernel spmd_kernel grid=3,1,1 block=1024,1,1"),
        "{launches:#?}"
    );
    assert!(stderr.contains("cannot be honoured"), "{stderr}");
    assert!(lines
        .last()
        .unwrap()
        .starts_with("EXIT contexts=0 allocations=0"));
}
