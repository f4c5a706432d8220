//! Images, globals and constructors: first use loads images, maps globals
//! and runs constructors; unregistering unloads; table mismatches.

use super::*;

#[test]
fn first_use_loads_images_maps_globals_and_runs_ctors() {
    let w = World::mandatory(&[(TAG_A, 2)]);
    let bin = TestBinary::new(
        &[TAG_A],
        &[
            HostItem::Kernel {
                flags: declare_target::CTOR,
            },
            HostItem::Kernel {
                flags: declare_target::DTOR,
            },
            HostItem::Global { size: 24 },
            HostItem::Kernel { flags: 0 },
        ],
    );
    let off = w.off();
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(bin.desc()) };
    let dev0 = w.platform.dev(0, 0);
    assert_eq!(dev0.loads.load(std::sync::atomic::Ordering::SeqCst), 0);

    // SAFETY: `loc` is null; `bin.addrs[3]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    unsafe {
        off.target(
            null(),
            0,
            bin.addrs[3] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap();
    assert_eq!(dev0.loads.load(std::sync::atomic::Ordering::SeqCst), 1);
    let launched: Vec<_> = dev0.launches.lock().unwrap().iter().map(|l| l.0).collect();
    assert_eq!(launched, vec![bin.addrs[0], bin.addrs[3]]);
    // The ctor ran as a 1x1 teams region.
    assert_eq!(dev0.launches.lock().unwrap()[0].2.teams, Some((1, 1, 0)));
    // The global is mapped with an infinite count.
    let global = dev0.table.entries();
    assert_eq!(global.len(), 1);
    assert_eq!(global[0].host_begin, bin.addrs[2]);
    assert_eq!(global[0].refs.dynamic, omptarget::mapping::INF_REF_COUNT);
    assert!(dev0.table.live_entries().is_empty());
    assert_eq!(off.target_is_present(bin.addrs[2] as *const c_void, 0), 1);

    // Second launch: no reload, no second ctor.
    // SAFETY: `loc` is null; `bin.addrs[3]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    unsafe {
        off.target(
            null(),
            0,
            bin.addrs[3] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap();
    assert_eq!(dev0.loads.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(dev0.launches.lock().unwrap().len(), 3);

    // Device 1 was never used: no dtor there at unregistration. (The main
    // program's unregister at exit, right before the teardown.)
    // SAFETY: `bin.desc()` is the descriptor registered above, still alive and valid.
    unsafe { off.unregister_lib_before_teardown(bin.desc()) };
    let launched: Vec<_> = dev0.launches.lock().unwrap().iter().map(|l| l.0).collect();
    assert_eq!(launched.last(), Some(&bin.addrs[1]));
    assert!(w.platform.dev(0, 1).launches.lock().unwrap().is_empty());
    assert!(dev0.table.is_empty(), "globals of the library are unmapped");
    // Before the teardown its image stays for the ordered unload.
    assert_eq!(dev0.unloads.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(w.stderr(), "");
}

#[test]
fn unregistering_one_of_two_binaries_unloads_its_images_where_loaded() {
    let w = World::mandatory(&[(TAG_A, 2)]);
    let keep = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let cycle = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `keep` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(keep.desc()) };
    // SAFETY: `cycle` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(cycle.desc()) };
    // SAFETY: `loc` is null; `cycle.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    unsafe {
        off.target(
            null(),
            0,
            cycle.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap();
    let dev0 = w.platform.dev(0, 0);
    let loads = dev0.loads.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(loads, 2, "both binaries load on first use of the device");
    // SAFETY: `cycle.desc()` is the descriptor registered above, still alive and valid.
    unsafe { off.unregister_lib(cycle.desc()) };
    assert_eq!(dev0.unloads.load(std::sync::atomic::Ordering::SeqCst), 1);
    let dev1 = w.platform.dev(0, 1);
    assert_eq!(
        dev1.unloads.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "never loaded there"
    );
    assert_eq!(off.registry.registered_libs(), 1);
    assert_eq!(w.stderr(), "");
}

#[test]
fn table_size_mismatch_fails_init() {
    let (w, bin) = one_kernel_world(1);
    w.platform
        .dev(0, 0)
        .extra_entries
        .store(2, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let err = unsafe {
        w.off().target(
            null(),
            0,
            bin.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert!(err.is_err());
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget error: Host and Target tables mismatch for device id 0 [1 != 3].\n\
             Libomptarget error: Failed to init globals on device 0\n{CONSULT}{NO_SOURCE}"
        )
    );
}

#[test]
fn unknown_host_entry_has_no_target_pointer() {
    let (w, _bin) = one_kernel_world(1);
    let bogus = 0x1234usize as *mut c_void;
    // SAFETY: `loc` is null; `bogus` is no registered entry, which the runtime finds in its
    // tables without ever dereferencing it; `MapArgs::empty()` has no arrays.
    let err = unsafe {
        w.off()
            .target(null(), 0, bogus, &MapArgs::empty(), 0, 0, false)
    };
    assert!(err.is_err());
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget error: Host ptr 0x0000000000001234 does not have a matching target pointer.\n{CONSULT}{NO_SOURCE}"
        )
    );
}

#[test]
fn a_region_of_an_unregistered_binary_is_not_launched_from_the_thread_cache() {
    // This thread launches `cycle`'s region (its entry is cached), the
    // binary is unregistered, and the same call must fail as LLVM's does,
    // never launch the unloaded image's kernel from the cache.
    let w = World::mandatory(&[(TAG_A, 1)]);
    let cycle = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `cycle` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(cycle.desc()) };
    // SAFETY: `loc` is null; `cycle.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let launch = || unsafe {
        off.target(
            null(),
            0,
            cycle.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    launch().unwrap();
    launch().unwrap();
    let dev0 = w.platform.dev(0, 0);
    // SAFETY: `cycle.desc()` is the descriptor registered above, still alive and valid.
    unsafe { off.unregister_lib(cycle.desc()) };
    assert_eq!(dev0.unloads.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(launch().is_err(), "the entry went with its binary");
    assert!(w.stderr().contains("Libomptarget"), "{}", w.stderr());
}
