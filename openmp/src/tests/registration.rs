//! Registration: device numbering in plugin use order, the offload policy
//! (disabled, default, mandatory), devices that fail to initialise, the
//! initial and default devices, and requires flags.

use super::*;

#[test]
fn devices_are_numbered_in_plugin_use_order() {
    let w = World::mandatory(&[(TAG_A, 2), (b"none", 0), (TAG_B, 3)]);
    let off = w.off();
    assert_eq!(off.num_devices(), 0);
    let b = TestBinary::new(&[TAG_B], &[HostItem::Kernel { flags: 0 }]);
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(b.desc()) };
    assert_eq!(off.num_devices(), 3);
    assert_eq!(w.registry.device_map(), vec![(2, 0), (2, 1), (2, 2)]);
    let a = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    // SAFETY: `a` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(a.desc()) };
    assert_eq!(off.num_devices(), 5);
    assert_eq!(off.initial_device(), 5);
    assert_eq!(w.registry.device_map()[3..], [(0, 0), (0, 1)]);
    assert_eq!(w.registry.registered_libs(), 2);
    // SAFETY: `a.desc()` is the descriptor registered above, still alive and valid.
    unsafe { off.unregister_lib(a.desc()) };
    assert_eq!(w.registry.registered_libs(), 1);
}

#[test]
fn disabled_policy_uses_no_plugin() {
    let w = World::new(&[(TAG_A, 2)], TargetOffloadPolicy::Disabled);
    let b = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(b.desc()) };
    assert_eq!(off.num_devices(), 0);
    // SAFETY: `loc` is null; `b.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let rc = unsafe {
        off.target(
            null(),
            -1,
            b.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_FAIL));
    assert_eq!(w.stderr(), "");
    off.init_all_plugins();
    assert_eq!(off.num_devices(), 0);
}

#[test]
fn default_policy_without_devices_falls_back_silently() {
    let w = World::new(&[(TAG_A, 1)], TargetOffloadPolicy::Default);
    // An image no plugin accepts: no device gets used.
    let b = TestBinary::new(&[TAG_B], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(b.desc()) };
    // SAFETY: `loc` is null; `b.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let rc = unsafe {
        off.target(
            null(),
            -1,
            b.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_FAIL));
    assert_eq!(w.registry.policy(), TargetOffloadPolicy::Disabled);
    assert_eq!(w.stderr(), "");
}

#[test]
fn default_policy_with_devices_becomes_mandatory() {
    let w = World::new(&[(TAG_A, 1)], TargetOffloadPolicy::Default);
    let b = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(b.desc()) };
    // SAFETY: `loc` is null; `b.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let rc = unsafe {
        off.target(
            null(),
            -1,
            b.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_SUCCESS));
    assert_eq!(w.registry.policy(), TargetOffloadPolicy::Mandatory);
}

#[test]
fn mandatory_without_devices_is_fatal() {
    let w = World::mandatory(&[(TAG_A, 1)]);
    let b = TestBinary::new(&[TAG_B], &[HostItem::Kernel { flags: 0 }]);
    let off = w.off();
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { off.register_lib(b.desc()) };
    // SAFETY: `loc` is null; `b.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let err = unsafe {
        off.target(
            null(),
            0,
            b.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap_err();
    assert_eq!(
        err.render(),
        format!("Libomptarget fatal error 1: {MANDATORY}\n")
    );
    assert_eq!(w.stderr(), format!("{CONSULT}{NO_SOURCE}"));
}

#[test]
fn source_location_precedes_the_fatal_error() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    let source = CString::new(";/src/dir/prog.c;main;17;9;;").unwrap();
    let loc = Ident {
        reserved_1: 0,
        flags: 0,
        reserved_2: 0,
        reserved_3: 0,
        psource: source.as_ptr(),
    };
    w.platform
        .dev(0, 0)
        .fail_run
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `loc` is a live `Ident` whose `psource` is a live NUL-terminated string;
    // `bin.addrs[0]` is the host address of an entry of the registered binary, whose test
    // kernel takes no arguments, and `MapArgs::empty()` has no arrays to read.
    let err = unsafe {
        off.target(
            &loc,
            0,
            bin.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap_err();
    assert_eq!(err.text, MANDATORY);
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget error: Executing target region abort target.\n{CONSULT}prog.c:17:9: "
        )
    );
}

#[test]
fn device_that_fails_to_initialise_is_not_ready() {
    let (w, bin) = one_kernel_world(2);
    w.platform
        .dev(0, 1)
        .fail_init
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let off = w.off();
    // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let err = unsafe {
        off.target(
            null(),
            1,
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
        format!("Libomptarget error: Device 1 is not ready.\n{CONSULT}{NO_SOURCE}")
    );
    // One init attempt only.
    assert!(!off.device_is_ready(1));
    assert_eq!(
        w.platform
            .dev(0, 1)
            .init_calls
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    // Out-of-range device numbers are not ready either.
    assert!(!off.device_is_ready(7));
    assert!(!off.device_is_ready(-3));
}

#[test]
fn initial_device_runs_on_the_host() {
    let (w, bin) = one_kernel_world(2);
    // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let rc = unsafe {
        w.off().target(
            null(),
            2,
            bin.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_FAIL));
    assert_eq!(w.stderr(), "");
}

#[test]
fn default_device_comes_from_the_host_runtime() {
    let (w, bin) = one_kernel_world(2);
    w.host
        .default_device
        .store(1, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    let rc = unsafe {
        w.off().target(
            null(),
            -1,
            bin.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_SUCCESS));
    assert_eq!(w.platform.dev(0, 1).launches.lock().unwrap().len(), 1);
    assert_eq!(w.platform.dev(0, 0).launches.lock().unwrap().len(), 0);
}

/// A caller built by clang 19 (or 22) gets LLVM 19's rule: fatal error 2,
/// and dynamic_allocators must agree too (LLVM 14 ignores it).
#[test]
fn requires_flags_of_a_clang_19_caller_follow_llvm_19() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    off.register_requires(requires::NONE).unwrap();
    off.register_requires(requires::NONE | requires::DYNAMIC_ALLOCATORS)
        .expect("LLVM 14 does not compare dynamic_allocators");
    *w.host.release.lock().unwrap() = crate::release::Release::Llvm19;
    let fatal = off
        .register_requires(requires::NONE | requires::DYNAMIC_ALLOCATORS)
        .unwrap_err();
    assert!(
        fatal.render().ends_with(
            "fatal error 2: '#pragma omp requires dynamic_allocators' not used consistently!\n"
        ),
        "{}",
        fatal.render()
    );
    let fatal = off
        .register_requires(requires::REVERSE_OFFLOAD)
        .unwrap_err();
    assert!(
        fatal.render().ends_with(
            "fatal error 2: '#pragma omp requires reverse_offload' not used consistently!\n"
        ),
        "{}",
        fatal.render()
    );
}

#[test]
fn requires_flags_must_agree_and_reach_device_init() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    off.register_requires(requires::UNIFIED_SHARED_MEMORY)
        .unwrap();
    off.register_requires(requires::UNIFIED_SHARED_MEMORY | requires::DYNAMIC_ALLOCATORS)
        .unwrap();
    assert_eq!(
        w.registry.requires_flags(),
        requires::UNIFIED_SHARED_MEMORY,
        "only the first registration sets the flags"
    );
    let fatal = off.register_requires(requires::NONE).unwrap_err();
    assert_eq!(
        fatal.render(),
        "Libomptarget fatal error 1: '#pragma omp requires unified_shared_memory' not used consistently!\n"
    );
    // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the registered
    // binary, whose test kernel takes no arguments, and `MapArgs::empty()` has no arrays to
    // read.
    unsafe {
        off.target(
            null(),
            0,
            bin.addrs[0] as *mut c_void,
            &MapArgs::empty(),
            0,
            0,
            false,
        )
    }
    .unwrap();
    assert_eq!(
        *w.platform.dev(0, 0).requires_seen.lock().unwrap(),
        vec![requires::UNIFIED_SHARED_MEMORY]
    );
}

/// The shim's case: one thread's API call made its `Offload` while the
/// runtime was not built yet (no plugins), and another thread's first
/// registration built it and numbered its devices during that call. The
/// call must find the device behind the number the registry now gives:
/// when the platform was a snapshot taken before the build, it found no
/// device there and `omp_target_alloc` returned null, silently (the
/// `memcpy_during_dlopen_and_dlclose` edge test, about 1 run in 30 under
/// load).
#[test]
fn an_offload_made_before_the_platform_is_built_sees_its_devices() {
    let built_later = std::sync::OnceLock::new();
    let w = World::mandatory(&[]);
    let early = Offload::new(&w.registry, &built_later, &w.host);
    assert_eq!(early.num_devices(), 0);
    // Another thread builds the platform and registers a binary.
    assert!(built_later.set(TestPlatform::new(&[(TAG_A, 1)])).is_ok());
    let b = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    let late = Offload::new(&w.registry, &built_later, &w.host);
    // SAFETY: `b` owns a valid descriptor and the arrays it points to, alive and unchanged for
    // as long as the runtime uses them in this test.
    unsafe { late.register_lib(b.desc()) };
    // The call that began before goes on with its `Offload`.
    assert_eq!(early.num_devices(), 1);
    let block = early.target_alloc(64, 0, AllocKind::Default);
    assert!(!block.is_null(), "device 0 is numbered, so it has a device");
    assert_eq!(built_later.get().unwrap().dev(0, 0).live_buffers(), 1);
    // SAFETY: `block` came from `target_alloc` on device 0, freed once.
    unsafe { early.target_free(block, 0) };
    assert_eq!(built_later.get().unwrap().dev(0, 0).live_buffers(), 0);
    assert_eq!(w.stderr(), "");
}
