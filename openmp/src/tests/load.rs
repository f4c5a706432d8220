//! Image loading holds no lock across the plugin's `load_binary`
//! ([`super::load`]): what another thread may do meanwhile (register or
//! unregister a library from its constructor or destructor, or load the
//! same image on the same device) is done here from inside the test
//! device's `load_binary`, on the loading thread itself (or on a thread it
//! starts). Before the fix each of these re-entered a lock the load held,
//! and hung.

use crate::testkit::*;
use omptarget::abi::declare_target;
use std::ffi::c_void;
use std::ptr::null;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};

const TAG: &[u8] = b"image-a";

/// Run `f` with the world inside device 0's next `load_binary`.
fn during_next_load(w: &World, f: impl FnOnce(&World) + Send + 'static) {
    let world = w as *const World as usize;
    *w.platform.dev(0, 0).during_load.lock().unwrap() = Some(Box::new(move || {
        // SAFETY: the hook runs inside a call on the world, which is alive.
        f(unsafe { &*(world as *const World) })
    }));
}

/// A target region on device 0 of `w`, entry `host_entry`.
fn region(w: &World, host_entry: usize) {
    // SAFETY: a registered host entry, no arguments.
    unsafe {
        w.off().target(
            null(),
            0,
            host_entry as *mut c_void,
            &super::MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap();
}

/// A binary handed to the hook, which frees it as a dlclose unmaps one.
struct Unmapped(TestBinary);
// SAFETY: only moved into the hook, which runs on the test's own thread.
unsafe impl Send for Unmapped {}

fn launched(w: &World) -> Vec<usize> {
    let launches = w.platform.dev(0, 0).launches.lock().unwrap();
    launches.iter().map(|l| l.0).collect()
}

/// A library's destructor unregisters it (and its code goes away) while
/// another thread loads its image: the load reads the runtime's copy, and
/// finds no table to publish into, so it unloads its copy at once.
#[test]
fn an_unregistration_during_the_load_of_its_image_unloads_the_orphan() {
    let w = World::mandatory(&[(TAG, 1)]);
    let gone = TestBinary::new(&[TAG], &[HostItem::Kernel { flags: 0 }]);
    let keep = TestBinary::new(&[TAG], &[HostItem::Kernel { flags: 0 }]);
    let gone_image = gone.desc.device_images as usize;
    // Registered first, so loaded first: its load runs the hook.
    // SAFETY: `gone` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(gone.desc()) };
    // SAFETY: `keep` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(keep.desc()) };
    let gone = Unmapped(gone);
    during_next_load(&w, move |w| {
        let gone = gone;
        // SAFETY: `gone.0.desc()` is the descriptor registered above, still alive and valid.
        unsafe { w.off().unregister_lib(gone.0.desc()) };
        // The library is unmapped: its image, entries and names are gone.
        drop(gone);
    });
    region(&w, keep.addrs[0]);

    let dev0 = w.platform.dev(0, 0);
    assert_eq!(dev0.loads.load(SeqCst), 2);
    assert_eq!(dev0.unloads.load(SeqCst), 1, "the orphan copy");
    let images = dev0.loaded_images.lock().unwrap().clone();
    assert!(
        !images.contains(&gone_image),
        "plugins get the runtime's copy"
    );
    assert_eq!(launched(&w), [keep.addrs[0]]);
    assert_eq!(w.registry.registered_libs(), 1);
    assert_eq!(w.stderr(), "");
}

/// A library's constructor registers it while another thread loads the
/// images of the device: its constructors run only once its image is
/// loaded (the loader notices the registration and loads again).
#[test]
fn a_registration_during_an_image_load_loads_its_image_before_its_ctors_run() {
    let w = World::mandatory(&[(TAG, 1)]);
    let first = TestBinary::new(&[TAG], &[HostItem::Kernel { flags: 0 }]);
    let late = TestBinary::new(
        &[TAG],
        &[
            HostItem::Kernel {
                flags: declare_target::CTOR,
            },
            HostItem::Kernel { flags: 0 },
        ],
    );
    // SAFETY: `first` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(first.desc()) };
    let late_desc = late.desc() as usize;
    // SAFETY: `late_desc` is `late`'s valid descriptor; `late` outlives the load hook, which
    // runs during the region below.
    during_next_load(&w, move |w| unsafe {
        w.off().register_lib(late_desc as *mut _)
    });
    region(&w, first.addrs[0]);

    let dev0 = w.platform.dev(0, 0);
    assert_eq!(dev0.loads.load(SeqCst), 2);
    assert_eq!(launched(&w), [late.addrs[0], first.addrs[0]], "ctor first");
    region(&w, late.addrs[1]);
    assert_eq!(dev0.loads.load(SeqCst), 2, "nothing left to load");
    assert_eq!(w.stderr(), "");
}

/// Two threads make their first region on one device at once: the second
/// waits for the first's load (holding no lock) and loads nothing.
#[test]
fn a_second_thread_waits_for_the_load_in_flight_and_loads_nothing() {
    let w = World::mandatory(&[(TAG, 1)]);
    let bin = TestBinary::new(&[TAG], &[HostItem::Kernel { flags: 0 }]);
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(bin.desc()) };
    let kernel = bin.addrs[0];
    // However long the first load takes on a loaded machine, the second
    // thread waits for it rather than loading its own copy after
    // LOAD_WAIT: what this test checks is the waiting, not the bound.
    w.off()
        .device(0)
        .expect("device 0")
        .slot
        .loads
        .wait_without_bound();
    let second = Arc::new(Mutex::new(None));
    let handle = second.clone();
    during_next_load(&w, move |w| {
        let world = w as *const World as usize;
        // SAFETY: the test joins the thread before the world goes away.
        let thread =
            std::thread::spawn(move || region(unsafe { &*(world as *const World) }, kernel));
        // Until it found this load in flight and waits for it: no sleep
        // that a loaded machine could outlast. (If it never waits, the
        // load count below fails the test.)
        let loads = &w.off().device(0).expect("device 0").slot.loads;
        loads.wait_for_waiters(1, || thread.is_finished());
        *handle.lock().unwrap() = Some(thread);
    });
    region(&w, kernel);
    let thread = second.lock().unwrap().take().expect("the hook ran");
    thread.join().unwrap();

    assert_eq!(w.platform.dev(0, 0).loads.load(SeqCst), 1);
    assert_eq!(launched(&w), [kernel, kernel]);
    assert_eq!(w.stderr(), "");
}

/// A region started on the loading thread itself, from inside its
/// `load_binary` (it cannot wait for itself), or a thread that waited
/// longer than `LOAD_WAIT` (the loader may need the dynamic loader's lock
/// the waiter holds): both load the image, one target table is used, the
/// constructor runs once, and unregistering unloads both copies.
#[test]
fn two_loads_of_one_image_on_one_device_keep_one_table_and_unload_both() {
    let w = World::mandatory(&[(TAG, 1)]);
    let bin = TestBinary::new(
        &[TAG],
        &[
            HostItem::Kernel {
                flags: declare_target::CTOR,
            },
            HostItem::Kernel {
                flags: declare_target::DTOR,
            },
            HostItem::Kernel { flags: 0 },
        ],
    );
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(bin.desc()) };
    let kernel = bin.addrs[2];
    during_next_load(&w, move |w| region(w, kernel));
    region(&w, kernel);

    let dev0 = w.platform.dev(0, 0);
    assert_eq!(dev0.loads.load(SeqCst), 2);
    assert_eq!(launched(&w), [bin.addrs[0], kernel, kernel]);
    // SAFETY: `bin.desc()` is the descriptor registered above, still alive and valid.
    unsafe { w.off().unregister_lib(bin.desc()) };
    assert_eq!(dev0.unloads.load(SeqCst), 2);
    assert_eq!(launched(&w).last(), Some(&bin.addrs[1]), "dtor once");
    assert_eq!(launched(&w).len(), 4);
    assert_eq!(w.stderr(), "");
}
