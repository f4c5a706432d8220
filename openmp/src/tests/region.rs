//! Target regions: mapped, literal and (packed) first-private arguments,
//! teams and the pushed tripcount, failures at each level, lambda captures.

use super::*;

#[test]
fn target_region_passes_mapped_literal_and_private_arguments() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [1i32, 2, 3, 4];
    let small = [5u8; 12];
    let large = [6u8; 2000];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM | mt::TARGET_PARAM);
    args.push(
        3 as *mut c_void,
        3 as *mut c_void,
        4,
        mt::LITERAL | mt::TARGET_PARAM,
    );
    args.map(
        small.as_ptr() as *mut u8,
        12,
        mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
    );
    args.map(
        large.as_ptr() as *mut u8,
        2000,
        mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
    );
    args.map(
        std::ptr::null_mut::<u8>(),
        64,
        mt::PRIVATE | mt::TARGET_PARAM,
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument. `args[2]`/`args[3]` are the 12- and 2000-byte
        // first-private copies.
        .kernel(bin.addrs[0], move |args, offsets, _| unsafe {
            let a = (args[0] as usize + offsets[0] as usize) as *mut i32;
            let factor = args[1] as usize as i32;
            for i in 0..4 {
                *a.add(i) *= factor;
            }
            let small = std::slice::from_raw_parts(args[2] as *const u8, 12).to_vec();
            let large = std::slice::from_raw_parts(args[3] as *const u8, 2000).to_vec();
            seen2
                .lock()
                .unwrap()
                .push((small, large, args[4].is_null(), args.len()));
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
    assert_eq!(a, [3, 6, 9, 12]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, vec![5u8; 12]);
    assert_eq!(seen[0].1, vec![6u8; 2000]);
    assert!(!seen[0].2, "private buffer allocated");
    assert_eq!(seen[0].3, 5);
    let dev = w.platform.dev(0, 0);
    assert_eq!(dev.live_buffers(), 0, "mapped and private buffers freed");
}

#[test]
fn packed_first_privates_share_one_buffer() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    let x = [1u8; 3];
    let y = [2u8; 8];
    let mut args = Args::default();
    args.map(
        x.as_ptr() as *mut u8,
        3,
        mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
    );
    args.map(
        y.as_ptr() as *mut u8,
        8,
        mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument. `args[0]`/`args[1]` are the 3- and 8-byte first-
        // private copies.
        .kernel(bin.addrs[0], move |args, _, _| unsafe {
            let x = std::slice::from_raw_parts(args[0] as *const u8, 3).to_vec();
            let y = std::slice::from_raw_parts(args[1] as *const u8, 8).to_vec();
            seen2
                .lock()
                .unwrap()
                .push((args[1] as usize - args[0] as usize, x, y));
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
    let seen = seen.lock().unwrap();
    // LLVM's aligned size of 3 bytes is 3 + 3 % 8 = 6.
    assert_eq!(seen[0], (6, vec![1; 3], vec![2; 8]));
}

#[test]
fn teams_region_gets_the_pushed_tripcount_once() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    // SAFETY: `loc` is null, which the contract allows.
    off.push_target_tripcount(Loc::UNKNOWN, 0, 1000).unwrap();
    // SAFETY: `loc` is null, which the contract allows.
    off.push_target_tripcount(Loc::UNKNOWN, 0, 5).unwrap();
    w.host.thread.store(3, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `loc` is null, which the contract allows.
    off.push_target_tripcount(Loc::UNKNOWN, 0, 77).unwrap();
    w.host.thread.store(0, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..2 {
        // SAFETY: `loc` is null; `bin.addrs[0]` is the host address of an entry of the
        // registered binary, whose test kernel takes no arguments, and `MapArgs::empty()` has
        // no arrays to read.
        unsafe {
            off.target(
                null(),
                0,
                bin.addrs[0] as *mut c_void,
                &MapArgs::empty(),
                4,
                64,
                true,
            )
        }
        .unwrap();
    }
    let launches = w.platform.dev(0, 0).launches.lock().unwrap().clone();
    assert_eq!(launches[0].2.teams, Some((4, 64, 1000)));
    assert_eq!(launches[1].2.teams, Some((4, 64, 0)));
}

#[test]
fn failed_mapping_in_target_region_reports_each_level() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    w.platform
        .dev(0, 0)
        .fail_alloc
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let mut a = [0u8; 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 4, mt::TO | mt::TARGET_PARAM);
    // SAFETY: `loc` is null; `bin.addrs[0]` is a kernel of the registered binary taking the
    // arguments `args` maps, whose arrays stay in place during the call and name live host data
    // of this test. The launch fails as the test asks before the kernel runs.
    assert!(unsafe {
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
    .is_err());
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).\n\
             Libomptarget error: Call to targetDataBegin failed, abort target.\n\
             Libomptarget error: Failed to process data before launching the kernel.\n{CONSULT}{NO_SOURCE}"
        )
    );
}

#[test]
fn lambda_capture_is_attached_to_device_data() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    let mut captured = [1i32, 2];
    #[repr(C)]
    struct Lambda {
        r: *mut i32,
    }
    let mut lambda = Lambda {
        r: captured.as_mut_ptr(),
    };
    let l_ptr = &mut lambda as *mut Lambda;
    let mut args = Args::default();
    // The captured data is mapped first, then the lambda object, then the
    // lambda's pointer member (PTR_AND_OBJ|LITERAL|IMPLICIT, MEMBER_OF(2)).
    args.map(captured.as_mut_ptr(), 8, mt::TO | mt::FROM);
    args.map(l_ptr, 8, mt::TO | mt::TARGET_PARAM);
    args.push(
        // SAFETY: `l_ptr` points to the live local lambda; `addr_of_mut!` makes no reference.
        unsafe { std::ptr::addr_of_mut!((*l_ptr).r) } as *mut c_void,
        captured.as_mut_ptr() as *mut c_void,
        8,
        LAMBDA | (2 << 48),
    );
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument. The lambda's `r` was attached to the device copy
        // of `captured`.
        .kernel(bin.addrs[0], |args, offsets, _| unsafe {
            let l = (args[0] as usize + offsets[0] as usize) as *mut Lambda;
            *(*l).r += 100;
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
    assert_eq!(captured, [101, 2]);
    assert_eq!(lambda.r, captured.as_mut_ptr());
}
const LAMBDA: i64 = mt::PTR_AND_OBJ | mt::LITERAL | mt::IMPLICIT;
