//! The `omp_target_*` API: alloc, memcpy, memcpy_rect, free, associate and
//! disassociate, and the invalid arguments we refuse.

use super::*;

#[test]
fn target_alloc_memcpy_free() {
    let (w, _bin) = one_kernel_world(2);
    let off = w.off();
    assert!(off.target_alloc(0, 0, AllocKind::Default).is_null());
    assert!(off.target_alloc(8, 5, AllocKind::Default).is_null());
    let d0 = off.target_alloc(16, 0, AllocKind::Default);
    let d1 = off.target_alloc(16, 1, AllocKind::Device);
    let h = off.target_alloc(16, 2, AllocKind::Default);
    assert!(!d0.is_null() && !d1.is_null() && !h.is_null());
    let src = [7u8; 16];
    let mut out = [0u8; 16];
    // SAFETY: `d0`/`d1` are 16-byte allocations of devices 0 and 1 and `h` a 16-byte `malloc`
    // for the host (device 2); `src`/`out` are 16-byte host arrays: every copy below stays in
    // those blocks.
    unsafe {
        assert_eq!(
            off.target_memcpy(d0, src.as_ptr() as *const c_void, 16, 0, 0, 0, 2),
            0
        );
        // Device to device through a host buffer.
        assert_eq!(off.target_memcpy(d1, d0, 8, 8, 0, 1, 0), 0);
        assert_eq!(
            off.target_memcpy(out.as_mut_ptr() as *mut c_void, d1, 16, 0, 0, 2, 1),
            0
        );
        assert_eq!(&out[8..], &[7u8; 8]);
        assert_eq!(
            off.target_memcpy(h, src.as_ptr() as *const c_void, 16, 0, 0, 2, 2),
            0
        );
        assert_eq!(*(h as *const u8), 7);
        // The plugin's exchange when it offers one.
        w.platform
            .dev(0, 0)
            .exchange
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(off.target_memcpy(d1, d0, 16, 0, 0, 1, 0), 0);
        assert_eq!(
            w.platform
                .dev(0, 0)
                .exchanges
                .load(std::sync::atomic::Ordering::SeqCst),
            1
        );
        // Bad input.
        assert_eq!(
            off.target_memcpy(std::ptr::null_mut(), d0, 0, 0, 0, 0, 0),
            0
        );
        assert_eq!(
            off.target_memcpy(std::ptr::null_mut(), d0, 4, 0, 0, 0, 0),
            -1
        );
        assert_eq!(off.target_memcpy(d0, d1, 4, 0, 0, 9, 1), -1);
        assert_eq!(
            w.stderr(),
            "Libomptarget error: Call to omp_target_memcpy with invalid arguments\n\
             Libomptarget error: omp_target_memcpy returns OFFLOAD_FAIL\n"
        );
        off.target_free(d0, 0);
        off.target_free(d1, 1);
        off.target_free(h, 2);
        off.target_free(std::ptr::null_mut(), 0);
    }
    assert_eq!(w.platform.dev(0, 0).live_buffers(), 0);
    assert_eq!(w.platform.dev(0, 1).live_buffers(), 0);
}

#[test]
fn memcpy_rect_copies_a_sub_matrix() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let src: Vec<i32> = (0..20).collect(); // 4x5
    let dev = off.target_alloc(4 * 6 * 3, 0, AllocKind::Default); // 3x6 ints
    let volume = [2usize, 3];
    let dst_offsets = [1usize, 2];
    let src_offsets = [1usize, 1];
    let dst_dims = [3usize, 6];
    let src_dims = [4usize, 5];
    // SAFETY: the calls pass null or two-element arrays of this test, and the blocks `src` (4x5
    // `i32`) and `dev` (3x6 `i32`) with offsets plus volume inside each side's dimensions; the
    // null ones are refused before any read.
    unsafe {
        assert_eq!(
            off.target_memcpy_rect(
                std::ptr::null_mut(),
                null(),
                4,
                2,
                null(),
                null(),
                null(),
                null(),
                null(),
                0,
                host
            ),
            i32::MAX
        );
        assert_eq!(
            off.target_memcpy_rect(
                dev,
                src.as_ptr() as *const c_void,
                4,
                2,
                volume.as_ptr(),
                dst_offsets.as_ptr(),
                src_offsets.as_ptr(),
                dst_dims.as_ptr(),
                src_dims.as_ptr(),
                0,
                host
            ),
            0
        );
        let on_device = std::slice::from_raw_parts(dev as *const i32, 18);
        assert_eq!(&on_device[6 + 2..6 + 5], &[6, 7, 8]);
        assert_eq!(&on_device[12 + 2..12 + 5], &[11, 12, 13]);
        assert_eq!(on_device[0], 0);
        assert_eq!(
            off.target_memcpy_rect(
                dev,
                src.as_ptr() as *const c_void,
                0,
                2,
                volume.as_ptr(),
                null(),
                null(),
                null(),
                null(),
                0,
                host
            ),
            -1
        );
    }
    assert_eq!(
        w.stderr(),
        "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments\n"
    );
}

/// `omp_target_free` of what the device did not allocate frees nothing and
/// says so (LLVM 14 hands it to the plugin's free); a null pointer or a
/// device that does not exist stays silent, as in LLVM.
#[test]
fn target_free_of_a_pointer_the_device_did_not_allocate_is_reported() {
    let (w, _bin) = one_kernel_world(2);
    let off = w.off();
    let d0 = off.target_alloc(16, 0, AllocKind::Default);
    let mut stack = [0u8; 8];
    let s = stack.as_mut_ptr() as *mut c_void;
    // SAFETY: `d0` is device 0's allocation and `s` a stack buffer; device-side frees of
    // anything else are refused, and the contract asks for `malloc`ed memory only on the
    // initial device, which none of these frees names.
    unsafe {
        off.target_free(s, 0);
        off.target_free(d0, 1); // allocated on device 0
        assert_eq!(w.platform.dev(0, 0).live_buffers(), 1);
        off.target_free(d0, 0);
        assert_eq!(w.platform.dev(0, 0).live_buffers(), 0);
        off.target_free(d0, 0); // twice
        off.target_free(std::ptr::null_mut(), 0);
        off.target_free(d0, 7); // no such device
    }
    let refused = |p: *mut c_void, device: i32| {
        format!(
            "Libomptarget error: omp_target_free: device {device} did not free {} \
             (not allocated there, or already freed)\n",
            hex(p)
        )
    };
    assert_eq!(
        w.stderr(),
        [refused(s, 0), refused(d0, 1), refused(d0, 0)].concat()
    );
}

/// A block that `omp_target_alloc(n, 0)` took from the host while there
/// was no device (device 0 was the initial device) is still freed by
/// `omp_target_free(p, 0)` after a library registered and device 0 became
/// a real device: back to `free`, silently, and the device frees nothing.
/// (LLVM 14 hands it to the device's free.)
#[test]
fn a_host_block_taken_before_any_device_is_freed_after_devices_appear() {
    let w = World::mandatory(&[(TAG_A, 2)]);
    let off = w.off();
    assert_eq!(off.initial_device(), 0);
    let early = off.target_alloc(16, 0, AllocKind::Default);
    assert!(!early.is_null());
    let bin = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(bin.desc()) };
    assert_eq!(off.initial_device(), 2);
    let d0 = off.target_alloc(16, 0, AllocKind::Default);
    assert_eq!(w.platform.dev(0, 0).live_buffers(), 1);
    // SAFETY: `early` was `malloc`ed by `target_alloc` while device 0 named the host (the
    // runtime remembers it), and `d0` is device 0's allocation: each is freed once here.
    unsafe {
        off.target_free(early, 0);
        off.target_free(d0, 0);
    }
    assert_eq!(w.platform.dev(0, 0).live_buffers(), 0);
    assert_eq!(w.stderr(), "");
    // Taken once: a second free of it is the device's to refuse.
    // SAFETY: the runtime took `early` out of its early-host set above, so device 0 is asked to
    // free it, which it refuses (not its allocation): nothing is freed twice.
    unsafe { off.target_free(early, 0) };
    assert!(w.stderr().contains("did not free"), "{}", w.stderr());
}

const MEMCPY_INVALID: &str =
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments\n";
const RECT_INVALID: &str =
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments\n";

/// `(size_t)-8`: an offset that, added with wrapping arithmetic, lands 8
/// bytes before the pointer.
const MINUS_8: usize = 8usize.wrapping_neg();

#[test]
fn memcpy_offsets_that_wrap_around_are_invalid_arguments() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let d = off.target_alloc(32, 0, AllocKind::Default);
    let src = [9u8; 8];
    let mut buf = [0u8; 32];
    let b = buf.as_mut_ptr() as *mut c_void;
    // Each pointer is 16 bytes into its block, so a wrapped offset of -8
    // would copy inside the block (observable, nothing corrupted).
    // SAFETY: `d` and `buf` are 32-byte blocks and `src` an 8-byte array: the `+16` pointers
    // stay in their blocks, the copies with a wrapping offset are refused before any access,
    // and `d` is read within its 32 bytes.
    unsafe {
        let d16 = (d as *mut u8).add(16) as *mut c_void;
        let b16 = (b as *mut u8).add(16) as *mut c_void;
        let s = src.as_ptr() as *const c_void;
        // host -> device, device -> host, host -> host
        assert_eq!(off.target_memcpy(d16, s, 8, MINUS_8, 0, 0, host), -1);
        assert_eq!(off.target_memcpy(b16, d16, 8, 0, MINUS_8, host, 0), -1);
        assert_eq!(off.target_memcpy(b16, s, 8, MINUS_8, 0, host, host), -1);
        assert_eq!(std::slice::from_raw_parts(d as *const u8, 32), &[0u8; 32]);
        assert_eq!(buf, [0u8; 32]);
        // The copied range itself may not run past the end of the address
        // space either (LLVM 14 hands such a length to the plugin, which
        // crashes).
        assert_eq!(off.target_memcpy(d, s, usize::MAX, 0, 0, 0, host), -1);
        assert_eq!(
            off.target_memcpy(b, s, usize::MAX - 8, 8, 0, host, host),
            -1
        );
        // The largest copy that fits still goes through the checks.
        assert_eq!(off.target_memcpy(d16, s, 8, 8, 0, 0, host), 0);
        assert_eq!(*(d as *const u8).add(24), 9);
        off.target_free(d, 0);
    }
    assert_eq!(w.stderr(), MEMCPY_INVALID.repeat(5));
}

#[test]
fn memcpy_rect_products_that_wrap_around_are_invalid_arguments() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let d = off.target_alloc(64, 0, AllocKind::Default);
    let src = [5u32; 16];
    let zeros = [0usize; 2];
    let dims = [4usize, 4];
    // SAFETY: `d` is a 64-byte device block, so `d + 8` stays in it; every call below has
    // offsets or volumes that wrap, which the runtime refuses before touching memory.
    unsafe {
        let d8 = (d as *mut u8).add(8) as *mut c_void;
        let s = src.as_ptr() as *const c_void;
        // 1 dimension: 4 * (2^63 - 1) wraps to -4.
        let half = [usize::MAX / 2];
        let one = [1usize];
        let dim = [16usize];
        let rc = off.target_memcpy_rect(
            d8,
            s,
            4,
            1,
            one.as_ptr(),
            half.as_ptr(),
            zeros.as_ptr(),
            dim.as_ptr(),
            dim.as_ptr(),
            0,
            host,
        );
        assert_eq!(rc, -1);
        // 2 dimensions: row offset 2^60 times a 16-byte row wraps to 0.
        let rows = [1usize << 60, 0];
        let volume = [1usize, 2];
        let rc = off.target_memcpy_rect(
            d,
            s,
            4,
            2,
            volume.as_ptr(),
            rows.as_ptr(),
            zeros.as_ptr(),
            dims.as_ptr(),
            dims.as_ptr(),
            0,
            host,
        );
        assert_eq!(rc, -1);
        // The row size itself wraps: 4 * 2^62 bytes.
        let huge_dims = [1usize, 1 << 62];
        let rc = off.target_memcpy_rect(
            d,
            s,
            4,
            2,
            volume.as_ptr(),
            zeros.as_ptr(),
            zeros.as_ptr(),
            huge_dims.as_ptr(),
            dims.as_ptr(),
            0,
            host,
        );
        assert_eq!(rc, -1);
        assert_eq!(std::slice::from_raw_parts(d as *const u8, 64), &[0u8; 64]);
        off.target_free(d, 0);
    }
    assert_eq!(w.stderr(), RECT_INVALID.repeat(3));
}

/// A block that does not fit in the array it is copied to or from
/// (`offsets[d] + volume[d] > dimensions[d]`) is refused before anything
/// is copied, even where its first rows would fit (LLVM 14 copies them,
/// then runs off the array).
#[test]
fn memcpy_rect_blocks_larger_than_the_arrays_are_invalid_arguments() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let d = off.target_alloc(64, 0, AllocKind::Default); // 4x4 ints
    let src = [5u32; 16];
    let mut back = [0u32; 16];
    let dims = [4usize, 4];
    let zeros = [0usize; 2];
    let rect = |dst: *mut c_void,
                src: *const c_void,
                volume: [usize; 2],
                dst_off: [usize; 2],
                src_off: [usize; 2],
                dst_dev: i32,
                // SAFETY: each call passes `dst`/`src` blocks of this test (64-byte `d`, host
                // `back`/`src` of 16 `u32`) and two-element arrays, as `target_memcpy_rect`
                // asks; blocks that would not fit are refused before any copy.
                src_dev: i32| unsafe {
        off.target_memcpy_rect(
            dst,
            src,
            4,
            2,
            volume.as_ptr(),
            dst_off.as_ptr(),
            src_off.as_ptr(),
            dims.as_ptr(),
            dims.as_ptr(),
            dst_dev,
            src_dev,
        )
    };
    let s = src.as_ptr() as *const c_void;
    let b = back.as_mut_ptr() as *mut c_void;
    // Destination: rows 2..5 of 4; columns 1..5 of 4; volume > dimension.
    assert_eq!(rect(d, s, [3, 2], [2, 0], [0, 0], 0, host), -1);
    assert_eq!(rect(d, s, [2, 4], [0, 1], [0, 0], 0, host), -1);
    assert_eq!(rect(d, s, [5, 1], zeros, zeros, 0, host), -1);
    // Source: the same on the device side of a copy back.
    assert_eq!(rect(b, d, [3, 2], [0, 0], [2, 0], host, 0), -1);
    assert_eq!(rect(b, d, [1, 5], zeros, zeros, host, 0), -1);
    // SAFETY: `d` is a 64-byte device block of the test device, i.e. 64 readable host bytes.
    unsafe {
        assert_eq!(std::slice::from_raw_parts(d as *const u8, 64), &[0u8; 64]);
    }
    assert_eq!(back, [0u32; 16]);
    // The largest block that fits still copies.
    assert_eq!(rect(d, s, [2, 2], [2, 2], [0, 0], 0, host), 0);
    // SAFETY: `d` is a 64-byte (16 `u32`) device block in host memory, so element 15 is in it;
    // it is then freed once on device 0, which allocated it.
    unsafe {
        assert_eq!(*(d as *const u32).add(15), 5);
        off.target_free(d, 0);
    }
    assert_eq!(w.stderr(), RECT_INVALID.repeat(5));
}

/// A 3-dimensional sub-block, checked element by element against the
/// obvious loop nest; a zero volume copies nothing and succeeds.
#[test]
fn memcpy_rect_copies_a_3d_sub_block() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let src_dims = [3usize, 4, 5];
    let dst_dims = [4usize, 3, 6];
    let src: Vec<u32> = (0..60).collect();
    let d = off.target_alloc(4 * 72, 0, AllocKind::Default);
    let volume = [2usize, 2, 3];
    let src_offsets = [1usize, 1, 2];
    let dst_offsets = [2usize, 0, 1];
    let mut back = vec![u32::MAX; 72];
    let zeros = [0usize; 3];
    // SAFETY: `d` is a 72-`u32` device block and `zero`/`src`/`back` host arrays of 72 `u32`;
    // the offset, volume and dimension arrays have 3 elements, and the checked block lies
    // inside both sides.
    unsafe {
        let zero = vec![0u32; 72];
        assert_eq!(
            off.target_memcpy(d, zero.as_ptr() as *const c_void, 4 * 72, 0, 0, 0, host),
            0
        );
        let rc = off.target_memcpy_rect(
            d,
            src.as_ptr() as *const c_void,
            4,
            3,
            volume.as_ptr(),
            dst_offsets.as_ptr(),
            src_offsets.as_ptr(),
            dst_dims.as_ptr(),
            src_dims.as_ptr(),
            0,
            host,
        );
        assert_eq!(rc, 0);
        let empty = [2usize, 0, 3];
        let rc = off.target_memcpy_rect(
            d,
            src.as_ptr() as *const c_void,
            4,
            3,
            empty.as_ptr(),
            zeros.as_ptr(),
            zeros.as_ptr(),
            dst_dims.as_ptr(),
            src_dims.as_ptr(),
            0,
            host,
        );
        assert_eq!(rc, 0);
        assert_eq!(
            off.target_memcpy(back.as_mut_ptr() as *mut c_void, d, 4 * 72, 0, 0, host, 0),
            0
        );
        off.target_free(d, 0);
    }
    let mut want = vec![0u32; 72];
    for i in 0..volume[0] {
        for j in 0..volume[1] {
            for k in 0..volume[2] {
                let s = ((src_offsets[0] + i) * 4 + src_offsets[1] + j) * 5 + src_offsets[2] + k;
                let t = ((dst_offsets[0] + i) * 3 + dst_offsets[1] + j) * 6 + dst_offsets[2] + k;
                want[t] = src[s];
            }
        }
    }
    assert_eq!(back, want);
    assert_eq!(w.stderr(), "");
}

#[test]
fn associate_and_disassociate() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let host = off.initial_device();
    let mut a = [3u32; 4];
    let ha = a.as_mut_ptr() as *const c_void;
    let d = off.target_alloc(16, 0, AllocKind::Default);
    assert_eq!(off.target_associate_ptr(ha, d, 16, 0, 0), 0);
    assert_eq!(off.target_associate_ptr(ha, d, 16, 0, 0), 0);
    assert_eq!(off.target_associate_ptr(ha, d, 16, 4, 0), -1);
    assert_eq!(off.target_is_present(ha, 0), 1);
    assert_eq!(off.target_is_present(ha, host), 1);
    assert_eq!(off.target_is_present(ha, 4), 0);
    // Mapping an associated range copies nothing and keeps it.
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(off.target_is_present(ha, 0), 1);
    assert_eq!(off.target_disassociate_ptr(ha, 0), 0);
    assert_eq!(off.target_disassociate_ptr(ha, 0), -1);
    assert_eq!(off.target_associate_ptr(null(), d, 16, 0, 0), -1);
    assert_eq!(off.target_associate_ptr(ha, d, 16, 0, host), -1);
    assert_eq!(off.target_associate_ptr(ha, d, 16, 0, 9), -1);
    assert_eq!(off.target_disassociate_ptr(null(), 0), -1);
    assert_eq!(off.target_disassociate_ptr(ha, host), -1);
    assert_eq!(off.target_disassociate_ptr(ha, 9), -1);
    assert_eq!(
        w.stderr(),
        "Libomptarget error: Not allowed to re-associate a different device ptr+offset with the same host ptr\n\
         Libomptarget error: Association not found\n\
         Libomptarget error: Call to omp_target_associate_ptr with invalid arguments\n\
         Libomptarget error: omp_target_associate_ptr: no association possible on the host\n\
         Libomptarget error: omp_target_associate_ptr returns OFFLOAD_FAIL\n\
         Libomptarget error: Call to omp_target_associate_ptr with invalid host_ptr\n\
         Libomptarget error: omp_target_disassociate_ptr: no association possible on the host\n\
         Libomptarget error: omp_target_disassociate_ptr returns OFFLOAD_FAIL\n"
    );
    // SAFETY: `d` is device 0's allocation, freed once.
    unsafe { off.target_free(d, 0) };
}

/// A free the plugin refuses (its `data_delete` fails) is reported with the
/// plugin's error, not as a pointer the device never allocated; the block
/// stays allocated.
#[test]
fn target_free_refused_by_the_plugin_names_the_plugin_error() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let d0 = off.target_alloc(16, 0, AllocKind::Default);
    w.platform
        .dev(0, 0)
        .fail_free
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: `d0` is device 0's allocation; the plugin refuses the free and the block stays
    // allocated.
    unsafe { off.target_free(d0, 0) };
    assert_eq!(w.platform.dev(0, 0).live_buffers(), 1);
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget error: omp_target_free: device 0 did not free {} (the plugin \
             refused: data_delete failed on device 0 (test device) with code -1)\n",
            hex(d0)
        )
    );
}

/// An address the device handed out is always the device's to free, even
/// if it is also recorded as an early host block (a program that gave an
/// early block back with plain `free`, whose address the device's
/// allocator then reused): the device frees it, `free` is never called on
/// it.
#[test]
fn a_device_block_at_a_stale_early_address_is_freed_by_the_device() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let d0 = off.target_alloc(16, 0, AllocKind::Default);
    // The stale record: as if an early block had lived at this address.
    w.registry.early_host_blocks.record(d0 as usize);
    // SAFETY: `d0` is a live block of device 0.
    unsafe { off.target_free(d0, 0) };
    assert_eq!(w.platform.dev(0, 0).live_buffers(), 0);
    assert_eq!(w.stderr(), "");
}

/// LLVM 22's device UIDs: `<plugin>-<device in plugin>` (the test
/// platform's plugins have no file name: `device`), `HOST` for the initial
/// device, each mapping back to its number; `omp_target_is_accessible` is
/// true only for the initial device (and -1).
#[test]
fn device_uids_map_back_and_only_the_host_is_accessible() {
    let (w, _bin) = one_kernel_world(2);
    let off = w.off();
    let uid = |d: i32| {
        let p = off.uid_from_device(d);
        // SAFETY: null or the registry's NUL-terminated UID string.
        (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap())
    };
    assert_eq!(uid(0), Some("device-0"));
    assert_eq!(uid(1), Some("device-1"));
    assert_eq!(uid(2), Some("HOST"));
    assert_eq!(uid(-2), None);
    assert_eq!(uid(7), None);
    for d in 0..3 {
        // SAFETY: a NUL-terminated UID string of the registry.
        assert_eq!(unsafe { off.device_from_uid(off.uid_from_device(d)) }, d);
    }
    let bogus = CString::new("device-9").unwrap();
    // SAFETY: null and a NUL-terminated string.
    unsafe {
        assert_eq!(off.device_from_uid(null()), -2);
        assert_eq!(off.device_from_uid(bogus.as_ptr()), -2);
    }
    let x = 0u8;
    let p = &x as *const u8 as *const c_void;
    assert!(!off.target_is_accessible(p, 1, 0));
    assert!(off.target_is_accessible(p, 1, 2));
    assert!(off.target_is_accessible(p, 1, -1));
    assert!(!off.target_is_accessible(null(), 1, 2));
}
