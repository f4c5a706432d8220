//! The CUDA plugin's C entries called directly (as LLVM's libomptarget
//! would), against the fake driver: the plugin's own teardown order with
//! everything still held, one stream per queue, and a driver that is gone
//! before the teardown (`CUDA_ERROR_DEINITIALIZED`).
use omptarget_plugin_kit::abi::{AsyncInfo, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use omptarget_plugin_kit::testing::{ImageFixture, Plugin};
use omptarget_test_support::cuda;
use omptarget_test_support::cuda::{first, last, log_lines};
use std::ffi::c_void;
use std::path::Path;

fn fixture() -> ImageFixture {
    ImageFixture::new(
        cuda::test_cubin(90),
        &[("spmd_kernel", 0), ("generic_kernel", 0), ("counter", 4)],
    )
}

/// Open the plugin, load the image on device 0 and allocate one block of
/// each kind; returns the plugin and the fixture (kept alive).
fn set_up() -> (Plugin, ImageFixture, Vec<*mut c_void>) {
    let plugin = Plugin::open(&cuda::cuda_plugin());
    // SAFETY: the plugin's entries, called as a runtime does.
    unsafe {
        assert_eq!((plugin.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((plugin.number_of_devices)(), 1);
        assert_eq!((plugin.init_device)(0), OFFLOAD_SUCCESS);
    }
    let image = fixture();
    // SAFETY: a valid image descriptor, alive while `image` is.
    let table = unsafe { (plugin.load_binary)(0, image.desc()) };
    assert!(!table.is_null());
    let blocks = (0..3)
        // SAFETY: kinds 0..3 are device, host and shared.
        .map(|kind| unsafe { (plugin.data_alloc)(0, 64, std::ptr::null_mut(), kind) })
        .collect::<Vec<_>>();
    assert!(blocks.iter().all(|b| !b.is_null()));
    (plugin, image, blocks)
}

fn run(name: &str, log: &Path) -> (std::process::Output, Vec<String>) {
    let out = cuda::run_child(
        name,
        &cuda::fake_driver_dir(&[]),
        &[("FAKE_CUDA_LOG", log.to_str().unwrap())],
    );
    (out, log_lines(log))
}

#[test]
fn deinit_device_releases_in_order_what_the_runtime_left() {
    if cuda::in_child() {
        let (plugin, _image, blocks) = set_up();
        let host = [1u8; 64];
        let mut queue = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        // SAFETY: a device block of 64 bytes and 64 host bytes; the queue
        // is never synchronised: its stream is still lent at deinit.
        let code = unsafe {
            (plugin.data_submit_async.unwrap())(
                0,
                blocks[0],
                host.as_ptr() as *mut c_void,
                64,
                &mut queue,
            )
        };
        assert_eq!(code, OFFLOAD_SUCCESS);
        assert!(!queue.queue.is_null(), "the queue got a stream");
        // An event the runtime never destroys.
        // SAFETY: the plugin's own entry, of LLVM's `__tgt_rtl_create_event` type.
        unsafe {
            let library = libloading::Library::new(cuda::cuda_plugin()).unwrap();
            let create: libloading::Symbol<omptarget_plugin_kit::abi::plugin::CreateEventFn> =
                library.get(b"__tgt_rtl_create_event").unwrap();
            let mut event = std::ptr::null_mut();
            assert_eq!(create(0, &mut event), OFFLOAD_SUCCESS);
            assert!(!event.is_null());
        }
        println!("MARK deinit");
        // SAFETY: entries called as a runtime does at shutdown.
        unsafe {
            assert_eq!((plugin.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
            assert_eq!((plugin.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        }
        plugin.close();
        return;
    }
    let log = cuda::log_path("plugin-order");
    let (out, lines) = run(
        "deinit_device_releases_in_order_what_the_runtime_left",
        &log,
    );
    assert!(out.status.success(), "{}", cuda::child_stderr(&out));
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    let sync = last(&lines, "cuCtxSynchronize").unwrap();
    let unload = first(&lines, "cuModuleUnload").unwrap();
    let frees: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("cuMemFree"))
        .map(|(i, _)| i)
        .collect();
    let events = first(&lines, "cuEventDestroy_v2").unwrap();
    let streams = first(&lines, "cuStreamDestroy_v2").unwrap();
    let release = first(&lines, "cuDevicePrimaryCtxRelease_v2").unwrap();
    assert_eq!(frees.len(), 3, "device, host and shared blocks: {lines:#?}");
    assert!(frees[2] < events && events < streams, "{lines:#?}");
    assert!(
        sync < unload
            && unload < frees[0]
            && frees[2] < streams
            && streams < release
            && lines[release + 1] == "CONTEXT_DESTROYED 0",
        "{lines:#?}"
    );
    // The host block went back with cuMemFreeHost.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("cuMemFreeHost"))
            .count(),
        1
    );
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

#[test]
fn deinit_device_runs_the_destructors_of_an_image_left_loaded() {
    if cuda::in_child() {
        let plugin = Plugin::open(&cuda::cuda_plugin());
        let image = ImageFixture::new(
            cuda::cubin_with_ctors_and_dtors(true),
            &[("spmd_kernel", 0)],
        );
        // SAFETY: the plugin's entries, called as a runtime does; the
        // image is never unloaded: `deinit_device` must do it.
        unsafe {
            assert_eq!((plugin.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
            assert_eq!((plugin.init_device)(0), OFFLOAD_SUCCESS);
            assert!(!(plugin.load_binary)(0, image.desc()).is_null());
            assert_eq!((plugin.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
            assert_eq!((plugin.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        }
        plugin.close();
        return;
    }
    let log = cuda::log_path("plugin-dtors");
    let (out, lines) = run(
        "deinit_device_runs_the_destructors_of_an_image_left_loaded",
        &log,
    );
    assert!(out.status.success(), "{}", cuda::child_stderr(&out));
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    let ctor = first(&lines, "DEVICE_CTOR").unwrap();
    let dtors: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("DEVICE_DTOR"))
        .map(String::as_str)
        .collect();
    assert_eq!(dtors, ["DEVICE_DTOR 0xe2", "DEVICE_DTOR 0xd1"]);
    let dtor = first(&lines, "DEVICE_DTOR").unwrap();
    let unload = first(&lines, "cuModuleUnload").unwrap();
    let release = first(&lines, "cuDevicePrimaryCtxRelease_v2").unwrap();
    assert!(
        ctor < dtor && dtor < unload && unload < release,
        "{lines:#?}"
    );
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

#[test]
fn each_queue_gets_its_own_stream_until_synchronised() {
    if cuda::in_child() {
        let (plugin, _image, blocks) = set_up();
        let input = [7u8; 64];
        let mut output = [0u8; 64];
        let mut a = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        let mut b = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        // SAFETY: 64-byte device blocks and host arrays that outlive the
        // synchronisation below.
        unsafe {
            let submit = plugin.data_submit_async.unwrap();
            let retrieve = plugin.data_retrieve_async.unwrap();
            let sync = plugin.synchronize.unwrap();
            assert_eq!(
                submit(0, blocks[0], input.as_ptr() as *mut c_void, 64, &mut a),
                OFFLOAD_SUCCESS
            );
            assert_eq!(
                submit(0, blocks[2], input.as_ptr() as *mut c_void, 64, &mut b),
                OFFLOAD_SUCCESS
            );
            assert_ne!(a.queue, b.queue, "two queues, two streams");
            assert_eq!(
                retrieve(0, output.as_mut_ptr().cast(), blocks[0], 64, &mut a),
                OFFLOAD_SUCCESS
            );
            let stream_a = a.queue;
            assert_eq!(sync(0, &mut a), OFFLOAD_SUCCESS);
            assert!(a.queue.is_null(), "synchronize gives the stream back");
            assert_eq!(sync(0, &mut b), OFFLOAD_SUCCESS);
            // The pool hands the stream out again.
            assert_eq!(
                submit(0, blocks[0], input.as_ptr() as *mut c_void, 64, &mut a),
                OFFLOAD_SUCCESS
            );
            assert!(a.queue == stream_a || a.queue == b.queue || !a.queue.is_null());
            assert_eq!(sync(0, &mut a), OFFLOAD_SUCCESS);
            // A pointer the plugin never allocated is refused, with a reason.
            assert_eq!((plugin.data_delete)(0, 0x1000 as *mut c_void), OFFLOAD_FAIL);
            for block in &blocks {
                assert_eq!((plugin.data_delete)(0, *block), OFFLOAD_SUCCESS);
            }
            assert_eq!((plugin.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        }
        assert_eq!(output, input);
        plugin.close();
        return;
    }
    let log = cuda::log_path("queues");
    let (out, lines) = run("each_queue_gets_its_own_stream_until_synchronised", &log);
    let stderr = cuda::child_stderr(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    // Two streams for two queues: the loader's went back to the pool and
    // serves queue `a`.
    let created = lines
        .iter()
        .filter(|l| l.starts_with("cuStreamCreate"))
        .count();
    assert_eq!(created, 2, "{lines:#?}");
    assert!(
        stderr.contains("was not allocated on device 0"),
        "the bad free's reason: {stderr}"
    );
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

#[test]
fn a_driver_gone_before_teardown_is_reported_never_fatal() {
    if cuda::in_child() {
        let (plugin, _image, _blocks) = set_up();
        // The driver shuts down first (as at process exit).
        // SAFETY: the fake driver the plugin loaded; its test hook takes
        // no arguments.
        unsafe {
            let cuda = libloading::Library::new("libcuda.so.1").unwrap();
            let shutdown: libloading::Symbol<unsafe extern "C" fn()> =
                cuda.get(b"fake_cuda_shutdown").unwrap();
            shutdown();
        }
        // SAFETY: entries called as a runtime does at shutdown.
        unsafe {
            assert_eq!((plugin.deinit_device.unwrap())(0), OFFLOAD_FAIL);
            assert_eq!((plugin.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        }
        plugin.close();
        println!("EXITING");
        return;
    }
    let log = cuda::log_path("deinitialized");
    let (out, lines) = run(
        "a_driver_gone_before_teardown_is_reported_never_fatal",
        &log,
    );
    let stderr = cuda::child_stderr(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("EXITING"));
    assert!(
        stderr.contains("the CUDA driver was already deinitialised")
            && stderr.contains("CUDA_ERROR_DEINITIALIZED"),
        "{stderr}"
    );
    // One refused call, then nothing more is asked of a driver that is gone.
    let shutdown = first(&lines, "SHUTDOWN").unwrap();
    let after: Vec<_> = lines[shutdown + 1..]
        .iter()
        .filter(|l| !l.starts_with("EXIT"))
        .collect();
    assert_eq!(after, ["DEINITIALIZED cuCtxSetCurrent"], "{lines:#?}");
}

/// The `.llvm.offloading` section of `examples/c/saxpy_offload.c` built by
/// `scripts/gpu-build.sh` (clang-19 `--offload-arch=sm_90`, ptxas 12.9):
/// an OffloadBinary holding a real cubin of ELF ABI version 8.
const CLANG19_SAXPY: &[u8] = include_bytes!("fixtures/saxpy_sm90.offload");
const SAXPY: &str = "__omp_offloading_fe00_5121a9_main_l27";
const REDUCTION: &str = "__omp_offloading_fe00_5121a9_main_l30";

#[test]
fn a_real_clang_19_image_gets_its_launch_environment() {
    if cuda::in_child() {
        let plugin = Plugin::open(&cuda::cuda_plugin());
        let image = ImageFixture::new(CLANG19_SAXPY.to_vec(), &[(SAXPY, 0), (REDUCTION, 0)]);
        // SAFETY: the plugin's entries, called as a runtime does, with a
        // valid image and argument arrays of `args.len()` elements.
        unsafe {
            assert_eq!((plugin.is_valid_binary)(image.desc()), 1);
            assert_eq!((plugin.init_device)(0), OFFLOAD_SUCCESS);
            let table = (plugin.load_binary)(0, image.desc());
            assert!(!table.is_null());
            let entries = std::slice::from_raw_parts((*table).entries_begin, 2);
            // The OpenMP layer's null placeholder first, then the mapped args.
            let mut args = [
                std::ptr::null_mut(),
                0x1000 as *mut c_void,
                0x2000 as *mut c_void,
            ];
            let mut offsets = [0isize; 3];
            for entry in entries {
                let code = (plugin.run_target_team_region)(
                    0,
                    entry.addr,
                    args.as_mut_ptr(),
                    offsets.as_mut_ptr(),
                    3,
                    0,
                    0,
                    1 << 20,
                );
                assert_eq!(code, OFFLOAD_SUCCESS);
            }
            assert_eq!((plugin.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        }
        plugin.close();
        return;
    }
    let log = cuda::log_path("clang19");
    let (out, lines) = run("a_real_clang_19_image_gets_its_launch_environment", &log);
    assert!(out.status.success(), "{}", cuda::child_stderr(&out));
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    // SPMD with MaxThreads 128 from the kernel environment: 2^20 / 128 blocks.
    let saxpy = lines
        .iter()
        .find(|l| l.starts_with(&format!("cuLaunchKernel {SAXPY} ")))
        .unwrap();
    assert!(
        saxpy.contains("grid=8192,1,1 block=128,1,1") && saxpy.ends_with("arg0=0xffffffffffffffff"),
        "{saxpy}"
    );
    // The reduction kernel gets a launch environment with an 8 x 1024-byte
    // buffer, freed once its stream is synchronised.
    let reduction = lines
        .iter()
        .position(|l| l.starts_with(&format!("cuLaunchKernel {REDUCTION} ")))
        .unwrap();
    assert!(
        !lines[reduction].ends_with("arg0=0xffffffffffffffff")
            && !lines[reduction].ends_with("arg0=(nil)"),
        "{}",
        lines[reduction]
    );
    assert!(lines[..reduction].iter().any(|l| l == "cuMemAlloc_v2 8192"));
    assert!(lines[..reduction].iter().any(|l| l == "cuMemAlloc_v2 16"));
    let frees = lines[reduction..]
        .iter()
        .take_while(|l| !l.starts_with("cuDevicePrimaryCtxRelease"))
        .filter(|l| l.starts_with("cuMemFree_v2"))
        .count();
    assert_eq!(frees, 2, "{lines:#?}");
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}

/// The scenarios above again, each child under valgrind: no memory error,
/// nothing definitely or indirectly lost (the plugin is dlclosed at the end
/// of each), and still no rule broken in the driver.
#[test]
fn the_plugin_under_valgrind_loses_nothing() {
    if cuda::in_child() {
        return;
    }
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(std::env::var_os("CI").is_none(), "CI needs valgrind");
        eprintln!("skipped: no valgrind");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for scenario in [
        "deinit_device_releases_in_order_what_the_runtime_left",
        "each_queue_gets_its_own_stream_until_synchronised",
        "a_real_clang_19_image_gets_its_launch_environment",
    ] {
        let log = cuda::log_path(&format!("valgrind-{scenario}"));
        let out = std::process::Command::new("valgrind")
            .args([
                "-q",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect",
                "--error-exitcode=9",
            ])
            .arg(&exe)
            .args([scenario, "--exact", "--test-threads=1"])
            .env("CUDA_TEST_CHILD", "1")
            .env("LD_LIBRARY_PATH", cuda::fake_driver_dir(&[]))
            .env("FAKE_CUDA_LOG", &log)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{scenario} under valgrind:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = log_lines(&log);
        assert!(
            lines
                .last()
                .is_some_and(|l| l == "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"),
            "{scenario}: {lines:#?}"
        );
        assert!(!lines.iter().any(|l| l.starts_with("VIOLATION")));
    }
}
