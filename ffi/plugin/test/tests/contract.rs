//! The test plugin's contract: conf, fault injection, log lines.

use omptarget_abi::{OFFLOAD_FAIL, OFFLOAD_IN_USE, OFFLOAD_SUCCESS};
use omptarget_plugin_kit::testing::*;
use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;

/// A private copy of the test plugin with `conf` (None: no conf file).
struct Setup {
    copy: IsolatedCopy,
    plugin: Option<Plugin>,
}

impl Setup {
    fn new(conf: Option<&str>) -> Self {
        let so = built_cdylib("omptarget-plugin-test", "libomptarget_rtl_test.so");
        let copy = isolated_copy(&so, "libomptarget.rtl.test.so");
        if let Some(text) = conf {
            std::fs::write(self_path(&copy.path, ".conf"), text).unwrap();
        }
        let plugin = Some(Plugin::open(&copy.path));
        Self { copy, plugin }
    }

    fn p(&self) -> &Plugin {
        self.plugin.as_ref().unwrap()
    }

    fn log_path(&self) -> PathBuf {
        self_path(&self.copy.path, ".log")
    }

    fn log(&self) -> Vec<String> {
        read_lines(&self.log_path())
    }

    /// dlclose the plugin and check that it is really unmapped (nothing
    /// pinned it, e.g. a thread-exit destructor registration).
    fn close(&mut self) {
        self.plugin.take().unwrap().close();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let path = self.copy.path.to_str().unwrap();
        assert!(!maps.contains(path), "{path} is still mapped after dlclose");
    }
}

fn self_path(so: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", so.display()))
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

const INC_C: &str = "void inc(long *p, long by) { *p += by; }\n";

fn hex(p: *mut c_void) -> String {
    format!("{:#x}", p as usize)
}

#[test]
fn defaults_and_the_full_log_of_a_session() {
    let work = tempfile::tempdir().unwrap();
    let so = compile_shared(work.path(), "inc.so", INC_C);
    let image = ImageFixture::new(std::fs::read(so).unwrap(), &[("inc", 0)]);
    let mut s = Setup::new(None);
    let p = s.p();
    let block;
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); `image.desc()` is valid while `image` lives;
    // `table` was just loaded on device 1 and checked non-null, so its first
    // entry (`inc`, one entry) and its name are live; `block` is an 8-byte
    // block of device 1, `v` points at the live i64 `value`, and `inc(p, by)`
    // gets its two arguments with two offsets.
    unsafe {
        (p.register_destruction_cb.unwrap())(None, null_mut());
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.number_of_devices)(), 2, "default devices=2");
        assert_eq!((p.is_valid_binary)(image.desc()), 1);
        assert_eq!((p.init_device)(1), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(1, image.desc());
        assert!(!table.is_null());
        let inc = (*(*table).entries_begin).addr;
        assert_eq!(
            CStr::from_ptr((*(*table).entries_begin).name).to_str(),
            Ok("inc")
        );
        block = (p.data_alloc)(1, 8, null_mut(), 3);
        assert!(!block.is_null());
        let mut value = 40i64;
        let v = (&mut value as *mut i64).cast::<c_void>();
        assert_eq!((p.data_submit)(1, block, v, 8), OFFLOAD_SUCCESS);
        let mut args = [block, std::ptr::without_provenance_mut::<c_void>(1)];
        let mut offsets = [0isize; 2];
        assert_eq!(
            (p.run_target_region)(1, inc, args.as_mut_ptr(), offsets.as_mut_ptr(), 2),
            OFFLOAD_SUCCESS
        );
        assert_eq!(
            (p.run_target_team_region)(1, inc, args.as_mut_ptr(), offsets.as_mut_ptr(), 2, 1, 1, 0),
            OFFLOAD_SUCCESS
        );
        assert_eq!((p.data_retrieve)(1, v, block, 8), OFFLOAD_SUCCESS);
        assert_eq!(value, 42, "the kernel really ran, twice");
        assert_eq!((p.data_delete)(1, block), OFFLOAD_SUCCESS);
        assert_eq!((p.unload_binary.unwrap())(1, image.desc()), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_device.unwrap())(1), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
    s.close();
    let b = hex(block);
    assert_eq!(
        s.log(),
        [
            "register_destruction_cb".to_string(),
            "init_plugin".into(),
            "number_of_devices".into(),
            "is_valid_binary".into(),
            "init_device 1".into(),
            "load_binary 1".into(),
            format!("data_alloc 1 8 3 {b}"),
            "data_submit 1 8".into(),
            "run_target_region 1".into(),
            "run_target_team_region 1".into(),
            "data_retrieve 1 8".into(),
            format!("data_delete 1 {b}"),
            "unload_binary 1".into(),
            "deinit_device 1".into(),
            "deinit_plugin".into(),
            "fini".into(),
        ]
    );
}

#[test]
fn devices_and_failing_devices() {
    let s = Setup::new(Some(
        "# five devices, two broken\ndevices = 5\nfail_init_device=1\nfail_init_device=3\n",
    ));
    let p = s.p();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); data_alloc with a null host pointer only
    // allocates.
    unsafe {
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.number_of_devices)(), 5);
        let results: Vec<i32> = (0..5).map(|d| (p.init_device)(d)).collect();
        assert_eq!(
            results,
            [
                OFFLOAD_SUCCESS,
                OFFLOAD_FAIL,
                OFFLOAD_SUCCESS,
                OFFLOAD_FAIL,
                OFFLOAD_SUCCESS
            ]
        );
        // A device whose init failed stays unusable.
        assert!((p.data_alloc)(1, 8, null_mut(), 0).is_null());
        assert!(!(p.data_alloc)(2, 8, null_mut(), 0).is_null());
    }
    let log = s.log();
    assert_eq!(
        &log[2..7],
        [
            "init_device 0",
            "init_device 1",
            "init_device 2",
            "init_device 3",
            "init_device 4"
        ]
    );
    assert_eq!(log[7], "data_alloc 1 8 0 null");
}

#[test]
fn failing_plugin_init() {
    let s = Setup::new(Some("fail_init_plugin=1\n"));
    let p = s.p();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); these entries take no pointers.
    unsafe {
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_FAIL);
        assert_eq!((p.number_of_devices)(), 0);
        assert_eq!((p.init_device)(0), OFFLOAD_FAIL);
    }
    assert_eq!(
        s.log(),
        ["init_plugin", "number_of_devices", "init_device 0"]
    );

    // Lazily (LLVM 14's runtime never calls init_plugin) it fails as well.
    let s = Setup::new(Some("fail_init_plugin=1\n"));
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); number_of_devices takes no pointers.
    unsafe { assert_eq!((s.p().number_of_devices)(), 0) };
    assert_eq!(s.log(), ["number_of_devices"]);
}

#[test]
fn allocation_limit_per_device() {
    let s = Setup::new(Some("alloc_limit_bytes=100\n"));
    let p = s.p();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); data_alloc with a null host pointer only
    // allocates, and `a` is a block it returned.
    unsafe {
        (p.init_device)(0);
        (p.init_device)(1);
        let a = (p.data_alloc)(0, 60, null_mut(), 0);
        assert!(!a.is_null());
        assert!(
            (p.data_alloc)(0, 50, null_mut(), 0).is_null(),
            "60 + 50 > 100"
        );
        assert!(
            !(p.data_alloc)(1, 100, null_mut(), 0).is_null(),
            "the limit is per device"
        );
        assert!(
            !(p.data_alloc)(0, 40, null_mut(), 0).is_null(),
            "60 + 40 = 100 fits"
        );
        assert_eq!((p.data_delete)(0, a), OFFLOAD_SUCCESS);
        assert!(
            !(p.data_alloc)(0, 50, null_mut(), 0).is_null(),
            "freed bytes count again"
        );
    }
    let log = s.log();
    assert_eq!(log[0], "init_device 0");
    assert_eq!(log[3], "data_alloc 0 50 0 null");
    assert!(log[4].starts_with("data_alloc 1 100 0 0x"), "{}", log[4]);
}

#[test]
fn custom_log_path_and_re_reading_the_conf() {
    let logs = tempfile::tempdir().unwrap();
    let first = logs.path().join("first.log");
    let second = logs.path().join("second.log");
    let mut s = Setup::new(Some(&format!("log={}\ndevices=3\n", first.display())));
    let conf = self_path(&s.copy.path, ".conf");
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it until `s.close()` below); these entries take no
    // pointers.
    unsafe {
        let p = s.p();
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.number_of_devices)(), 3);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        std::fs::write(&conf, format!("log={}\ndevices=1\n", second.display())).unwrap();
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.number_of_devices)(), 1);
    }
    s.close();
    assert_eq!(
        read_lines(&first),
        ["init_plugin", "number_of_devices", "deinit_plugin"]
    );
    assert_eq!(
        read_lines(&second),
        ["init_plugin", "number_of_devices", "fini"]
    );
    assert!(!s.log_path().exists(), "the default log is not used");
}

#[test]
fn a_bad_conf_fails_initialisation() {
    let s = Setup::new(Some("devices=2\ncolour=blue\n"));
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); init_plugin takes no pointers.
    unsafe { assert_eq!((s.p().init_plugin.unwrap())(), OFFLOAD_FAIL) };
    // The log still goes to the default place.
    assert_eq!(s.log(), ["init_plugin"]);
}

#[test]
fn fini_is_logged_when_the_library_is_closed() {
    // Never initialised: only the close.
    let mut s = Setup::new(None);
    s.close();
    assert_eq!(s.log(), ["fini"]);
}

#[test]
fn injected_panics_become_failures() {
    let work = tempfile::tempdir().unwrap();
    let so = compile_shared(work.path(), "inc.so", INC_C);
    let image = ImageFixture::new(std::fs::read(so).unwrap(), &[("inc", 0)]);
    let s = Setup::new(Some("panic_in=data_submit\npanic_in=load_binary\n"));
    let p = s.p();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped (`s` holds it); `image.desc()` is valid while `image` lives;
    // `block` is an 8-byte block of device 0 and `v` points at the live i64
    // `value`, so the 8-byte copies stay in bounds.
    unsafe {
        (p.init_device)(0);
        assert!((p.load_binary)(0, image.desc()).is_null());
        let block = (p.data_alloc)(0, 8, null_mut(), 0);
        let mut value = 1i64;
        let v = (&mut value as *mut i64).cast::<c_void>();
        assert_eq!((p.data_submit)(0, block, v, 8), OFFLOAD_FAIL);
        // The plugin is still usable after the panics.
        assert_eq!((p.data_retrieve)(0, v, block, 8), OFFLOAD_SUCCESS);
        assert_eq!((p.data_delete)(0, block), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}

/// A thread that hit a panic inside the plugin exits after the plugin was
/// closed: nothing the panic path set up may run at thread exit.
#[test]
fn threads_outlive_a_closed_plugin_after_a_panic() {
    let mut s = Setup::new(Some("panic_in=data_alloc\n"));
    let (init_device, data_alloc) = (s.p().init_device, s.p().data_alloc);
    let (used_tx, used_rx) = std::sync::mpsc::channel();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        // SAFETY: the entries were copied out of `s`, which is only closed
        // after this thread reports on `used_tx` that it is done calling them;
        // data_alloc with a null host pointer only allocates.
        unsafe {
            assert_eq!(init_device(0), OFFLOAD_SUCCESS);
            assert!(data_alloc(0, 8, null_mut(), 0).is_null());
        }
        used_tx.send(()).unwrap();
        closed_rx.recv().unwrap();
    });
    used_rx.recv().unwrap();
    s.close();
    closed_tx.send(()).unwrap();
    worker.join().unwrap();
}

/// `__tgt_rtl_deinit_plugin` while a kernel runs on another thread: the
/// deinit gives up after its bounded wait, keeps the state and answers
/// `OFFLOAD_IN_USE` (it used to wait forever, and every later call of every
/// thread with it), the kernel
/// finishes, and a deinit after it succeeds. `init_plugin` meanwhile
/// returns at once (the plugin is live) instead of waiting for the kernel.
#[test]
fn deinit_during_a_kernel_gives_up_and_keeps_the_state() {
    const WAIT_C: &str = "void wait_for(long *entered, long *go) {\n\
        __atomic_store_n(entered, 1, __ATOMIC_RELEASE);\n\
        while (!__atomic_load_n(go, __ATOMIC_ACQUIRE)) {}\n}\n";
    let work = tempfile::tempdir().unwrap();
    let so = compile_shared(work.path(), "wait.so", WAIT_C);
    let image = ImageFixture::new(std::fs::read(so).unwrap(), &[("wait_for", 0)]);
    let mut s = Setup::new(None);
    let p = s.p();
    let entered = std::sync::atomic::AtomicI64::new(0);
    let go = std::sync::atomic::AtomicI64::new(0);
    // SAFETY: the plugin stays open while `p` lives (`s` holds it);
    // `image.desc()` is valid while `image` lives; the table was just
    // loaded and checked non-null; the kernel's two arguments are the
    // addresses of `entered` and `go`, which outlive the scope (the test
    // plugin's devices are host memory, and the kernel only touches them
    // atomically).
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(0, image.desc());
        assert!(!table.is_null());
        let wait_for = (*(*table).entries_begin).addr as usize;
        let run = p.run_target_region;
        let (entered_at, go_at) = (entered.as_ptr() as usize, go.as_ptr() as usize);
        /// Lets the kernel finish however the scope ends: a failed assert
        /// must fail the test, not leave the kernel spinning (the scope
        /// joins it before the panic goes on).
        struct Release<'a>(&'a std::sync::atomic::AtomicI64);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(1, std::sync::atomic::Ordering::Release);
            }
        }
        std::thread::scope(|scope| {
            let release = Release(&go);
            let kernel = scope.spawn(move || {
                let mut args = [entered_at as *mut c_void, go_at as *mut c_void];
                let mut offsets = [0isize; 2];
                run(
                    0,
                    wait_for as *mut c_void,
                    args.as_mut_ptr(),
                    offsets.as_mut_ptr(),
                    2,
                )
            });
            while entered.load(std::sync::atomic::Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
            assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
            assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_IN_USE);
            // The state was kept: the plugin still answers.
            assert_eq!((p.number_of_devices)(), 2);
            drop(release);
            assert_eq!(kernel.join().unwrap(), OFFLOAD_SUCCESS);
        });
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
    s.close();
}
