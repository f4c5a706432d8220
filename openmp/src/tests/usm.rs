//! Unified shared memory: host pointers go to the device as they are.

use super::*;

#[test]
fn unified_shared_memory_passes_host_pointers() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    off.register_requires(requires::UNIFIED_SHARED_MEMORY)
        .unwrap();
    let mut a = [1i32; 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM | mt::TARGET_PARAM);
    let host_addr = a.as_ptr() as usize;
    w.platform
        .dev(0, 0)
        .kernel(bin.addrs[0], move |args, _, _| {
            assert_eq!(args[0] as usize, host_addr);
            // SAFETY: under unified shared memory the kernel gets the host address of the live
            // 4-byte `a` (asserted just above).
            unsafe { *(args[0] as *mut i32) = 5 };
        });
    // SAFETY: `loc` is null; `bin.addrs[0]` is a kernel of the registered binary taking the
    // arguments `args` maps, whose arrays stay in place during the call and name live host data
    // of this test.
    unsafe {
        off.target(
            null(),
            0,
            bin.addrs[0] as *mut c_void,
            &args.view(),
            0,
            0,
            false,
        )
    }
    .unwrap();
    assert_eq!(a[0], 5);
    let dev = w.platform.dev(0, 0);
    assert!(dev.table.is_empty());
    assert_eq!(dev.live_buffers(), 0);
    assert_eq!(off.target_is_present(a.as_ptr() as *const c_void, 0), 0);
    // `close` forces a device copy.
    let mut close = Args::default();
    close.map(a.as_mut_ptr(), 16, mt::TO | mt::CLOSE);
    // SAFETY: `loc` is null; `close`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &close.view()) }.unwrap();
    assert_eq!(dev.table.len(), 1);
    assert_eq!(off.target_is_present(a.as_ptr() as *const c_void, 0), 1);
}
