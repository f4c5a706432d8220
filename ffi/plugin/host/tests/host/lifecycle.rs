//! init_plugin / deinit_plugin / re-init, the safety net, and what the
//! library leaves behind when it is closed.

use crate::helpers::*;
use std::ffi::c_void;
use std::process::Command;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn init_deinit_and_reinit() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    let (init, deinit) = (p.init_plugin.unwrap(), p.deinit_plugin.unwrap());
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `counter` is the
    // 8-byte global of the table loaded in this round, read (8 bytes) before
    // deinit drops it; `bump` from that table takes no arguments.
    unsafe {
        assert_eq!(deinit(), OFFLOAD_FAIL, "deinit before init");
        assert_eq!(init(), OFFLOAD_SUCCESS);
        assert_eq!(init(), OFFLOAD_SUCCESS, "a second init is a no-op");
        for round in 0..3 {
            assert_eq!((p.number_of_devices)(), 4);
            assert!(
                (p.load_binary)(0, image.desc()).is_null(),
                "device 0 needs init_device"
            );
            assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
            let table = (p.load_binary)(0, image.desc());
            let counter = entry_addr(table, "counter");
            let mut value = [0i64];
            retrieve(&p, 0, &mut value, counter);
            assert_eq!(value[0], 0, "round {round}: a fresh image copy");
            assert_eq!(run(&p, 0, entry_addr(table, "bump"), &[]), OFFLOAD_SUCCESS);
            // Leave memory and the image for deinit_plugin to release.
            alloc(&p, 0, 1 << 20);
            assert_eq!(deinit(), OFFLOAD_SUCCESS);

            // Everything fails until the next init; nothing re-initialises lazily.
            assert_eq!((p.number_of_devices)(), 0);
            assert_eq!((p.init_device)(0), OFFLOAD_FAIL);
            assert!((p.data_alloc)(0, 8, null_mut(), 0).is_null());
            assert_eq!(deinit(), OFFLOAD_FAIL, "double deinit");
            assert_eq!(init(), OFFLOAD_SUCCESS);
        }
    }
}

#[test]
fn deinit_device_releases_the_device_only() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `t0` and `t1` were
    // just loaded, and after deinit_device(0) `bump0` and `block` are only
    // passed to be refused; `bump1` takes no arguments.
    unsafe {
        (p.init_device)(0);
        (p.init_device)(1);
        let t0 = (p.load_binary)(0, image.desc());
        let t1 = (p.load_binary)(1, image.desc());
        let (bump0, bump1) = (entry_addr(t0, "bump"), entry_addr(t1, "bump"));
        let block = alloc(&p, 0, 64);
        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
        // Device 0 is gone: its kernels, memory and itself.
        assert_eq!(run(&p, 0, bump0, &[]), OFFLOAD_FAIL);
        assert_eq!((p.data_delete)(0, block), OFFLOAD_FAIL);
        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_FAIL);
        // Device 1 is untouched.
        assert_eq!(run(&p, 1, bump1, &[]), OFFLOAD_SUCCESS);
        // Device 0 comes back empty.
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        assert_eq!(run(&p, 0, bump0, &[]), OFFLOAD_FAIL);
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_FAIL);
    }
}

#[test]
fn first_entry_initialises_lazily() {
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; these entries take no pointers.
    unsafe {
        // LLVM 14's runtime starts with number_of_devices.
        assert_eq!((p.number_of_devices)(), 4);
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.init_device)(3), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}

static CALLS: AtomicUsize = AtomicUsize::new(0);
static LAST_DATA: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_destroyed(data: *mut c_void) {
    CALLS.fetch_add(1, Ordering::SeqCst);
    LAST_DATA.store(data as usize, Ordering::SeqCst);
}

#[test]
fn safety_net_calls_the_destruction_callback_only_while_initialised() {
    // Closed while initialised: the callback runs once, with its data.
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `on_destroyed` matches the callback type and never dereferences
    // its data, so any data value will do.
    unsafe {
        (p.register_destruction_cb.unwrap())(Some(on_destroyed), 0x1234 as *mut c_void);
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
    assert_eq!(CALLS.load(Ordering::SeqCst), 0);
    p.close();
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(LAST_DATA.load(Ordering::SeqCst), 0x1234);

    // Closed after deinit_plugin, or never initialised, or unregistered:
    // no call.
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `on_destroyed` matches the callback type and never dereferences
    // its data.
    unsafe {
        (p.register_destruction_cb.unwrap())(Some(on_destroyed), null_mut());
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
    p.close();
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `on_destroyed` matches the callback type and never dereferences
    // its data.
    unsafe { (p.register_destruction_cb.unwrap())(Some(on_destroyed), null_mut()) };
    p.close();
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `on_destroyed` matches the callback type and never dereferences
    // its data.
    unsafe {
        (p.register_destruction_cb.unwrap())(Some(on_destroyed), null_mut());
        (p.init_plugin.unwrap())();
        (p.register_destruction_cb.unwrap())(None, null_mut());
    }
    p.close();
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
}

#[test]
fn no_teardown_hooks_are_registered() {
    let so = host_so();
    let nm = |args: &[&str]| {
        let out = Command::new("nm")
            .args(args)
            .arg(&so)
            .output()
            .expect("running nm");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let undefined = nm(&["-D", "--undefined-only"]);
    assert!(
        !undefined.contains("__cxa_atexit"),
        "imports __cxa_atexit:\n{undefined}"
    );
    assert!(
        !undefined.contains(" atexit"),
        "imports atexit:\n{undefined}"
    );
    // Load/unload-time code: the toolchain's and std's, plus exactly one
    // function of ours, the safety net in .fini_array.
    let toolchain = |f: &str| {
        ["frame_dummy", "__do_global_dtors_aux"].contains(&f) || f.contains("ARGV_INIT_ARRAY")
    };
    let init = array_section_functions(&so, ".init_array");
    assert!(init.iter().all(|f| toolchain(f)), "{init:?}");
    let fini = array_section_functions(&so, ".fini_array");
    let ours: Vec<&String> = fini.iter().filter(|f| !toolchain(f)).collect();
    assert_eq!(ours.len(), 1, "{fini:?}");
    assert!(ours[0].contains("omptarget_safety_net"), "{fini:?}");
    // Every required entry and every lifecycle entry is exported.
    let defined = nm(&["-D", "--defined-only"]);
    for name in omptarget_abi::plugin::names::REQUIRED.iter().chain(&[
        "__tgt_rtl_init_plugin",
        "__tgt_rtl_deinit_plugin",
        "__tgt_rtl_deinit_device",
        "__tgt_rtl_unload_binary",
        "__tgt_rtl_register_destruction_cb",
    ]) {
        assert!(
            defined.lines().any(|l| l.ends_with(&format!(" T {name}"))),
            "{name} is not exported"
        );
    }
}

/// A thread that used the plugin exits after the plugin was closed: no
/// thread-exit destructor of the plugin may be left to run (it would jump
/// into unmapped code and crash this process).
#[test]
fn threads_outlive_the_closed_plugin() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (copy, p) = host_plugin();
    let (used_tx, used_rx) = std::sync::mpsc::channel();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel::<()>();
    let desc = image.desc() as usize;
    let entries = (
        p.init_device,
        p.load_binary,
        p.run_target_region,
        p.data_alloc,
        p.data_delete,
    );
    let worker = std::thread::spawn(move || {
        let (init_device, load_binary, run_region, data_alloc, data_delete) = entries;
        // SAFETY: the entries were copied out of `p`, whose library is only
        // closed after this thread reports on `used_tx` that it is done calling
        // them; `desc` is `image.desc()`, valid while `image` lives (to the end
        // of the test); `bump` comes from the table just loaded on device 0 and
        // takes no arguments.
        unsafe {
            assert_eq!(init_device(0), OFFLOAD_SUCCESS);
            let table = load_binary(0, desc as *mut _);
            let bump = entry_addr(table, "bump");
            assert_eq!(
                run_region(0, bump, null_mut(), null_mut(), 0),
                OFFLOAD_SUCCESS
            );
            let block = data_alloc(0, 8, null_mut(), 0);
            assert_eq!(data_delete(0, block), OFFLOAD_SUCCESS);
            // An error path too (it formats and prints a message).
            assert!(data_alloc(0, -1, null_mut(), 0).is_null());
        }
        used_tx.send(()).unwrap();
        closed_rx.recv().unwrap();
    });
    used_rx.recv().unwrap();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; deinit_plugin takes no pointers.
    unsafe { assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS) };
    p.close();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let path = copy.path.to_str().unwrap();
    assert!(!maps.contains(path), "{path} is still mapped after dlclose");
    closed_tx.send(()).unwrap();
    worker.join().unwrap();
}
