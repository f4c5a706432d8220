//! Data begin / end (`target data`, `enter/exit data`): reference counts,
//! `always`, `present`, `ompx_hold`, extensions, `return_param`,
//! `ptr_and_obj` attachment and combined struct entries.

use super::*;

#[test]
fn tofrom_round_trip_and_refcounts() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [1i32, 2, 3, 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    let dev = w.platform.dev(0, 0);
    let target = dev.table.translate(a.as_ptr() as usize, 16).unwrap();
    // SAFETY: `target` is the test device's buffer (host memory) holding the 16 mapped bytes, 4
    // aligned `i32`; test-only aliasing: the runtime writes it through raw pointers only inside
    // the calls below, between the test's uses of `on_device`.
    let on_device = unsafe { std::slice::from_raw_parts_mut(target as *mut i32, 4) };
    assert_eq!(on_device, &[1, 2, 3, 4]);
    // A nested enter keeps it alive; its exit copies nothing.
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    on_device.copy_from_slice(&[5, 6, 7, 8]);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(a, [1, 2, 3, 4]);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(a, [5, 6, 7, 8]);
    assert!(dev.table.is_empty());
    assert_eq!(dev.live_buffers(), 0);
    assert_eq!(w.stderr(), "");
}

#[test]
fn always_from_copies_without_last_reference() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [0u8; 8];
    let mut enter = Args::default();
    enter.map(a.as_mut_ptr(), 8, mt::TO);
    // SAFETY: `loc` is null; `enter`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &enter.view()) }.unwrap();
    // SAFETY: `loc` is null; `enter`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &enter.view()) }.unwrap();
    let dev = w.platform.dev(0, 0);
    let target = dev.table.translate(a.as_ptr() as usize, 8).unwrap();
    // SAFETY: `target` is the test device's buffer (host memory) of the 8 mapped bytes.
    unsafe { *(target as *mut u8) = 9 };
    let mut exit = Args::default();
    exit.map(a.as_mut_ptr(), 8, mt::FROM | mt::ALWAYS);
    // SAFETY: `loc` is null; `exit`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &exit.view()) }.unwrap();
    assert_eq!(a[0], 9);
    assert_eq!(dev.table.len(), 1);
    // delete removes it whatever the count.
    let mut delete = Args::default();
    delete.map(a.as_mut_ptr(), 8, mt::DELETE);
    // SAFETY: `loc` is null; `delete`'s arrays stay in place for the call and map live host
    // data of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &delete.view()) }.unwrap();
    assert!(dev.table.is_empty());
}

#[test]
fn explicit_extension_is_reported_like_llvm() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [0i32; 8];
    let mut first = Args::default();
    first.map(a.as_mut_ptr(), 16, mt::TO);
    // SAFETY: `loc` is null; `first`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &first.view()) }.unwrap();
    let mut second = Args::default();
    // SAFETY: `a` has 8 elements, so `a + 2` is in bounds.
    let begin = unsafe { a.as_mut_ptr().add(2) };
    second.map(begin, 16, mt::TO);
    // SAFETY: `loc` is null; `second`'s arrays stay in place for the call and map live host
    // data of this test, as their map types say.
    let fatal = unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &second.view()) }.unwrap_err();
    assert_eq!(fatal.text, MANDATORY);
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget message: explicit extension not allowed: host address specified is {} (16 bytes), but device allocation maps to host at {} (16 bytes)\n\
             Libomptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).\n{CONSULT}{NO_SOURCE}",
            hex(begin as *const c_void),
            hex(a.as_ptr() as *const c_void)
        )
    );
}

#[test]
fn present_modifier_requires_mapping_on_entry_and_exit_data() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [0i32; 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::PRESENT);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    assert!(unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.is_err());
    let p = hex(a.as_ptr() as *const c_void);
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget message: device mapping required by 'present' map type modifier does not exist for host address {p} (16 bytes)\n\
             Libomptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).\n{CONSULT}{NO_SOURCE}"
        )
    );
    let mut exit = Args::default();
    exit.map(a.as_mut_ptr(), 16, mt::FROM | mt::PRESENT);
    // SAFETY: `loc` is null; `exit`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    assert!(unsafe { off.target_data_end(Loc::UNKNOWN, 0, &exit.view()) }.is_err());
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget message: device mapping required by 'present' map type modifier does not exist for host address {p} (16 bytes)\n{CONSULT}{NO_SOURCE}"
        )
    );
}

#[test]
fn hold_mapping_survives_exit_data_delete() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [0u8; 16];
    let mut held = Args::default();
    held.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM | mt::OMPX_HOLD);
    // SAFETY: `loc` is null; `held`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &held.view()) }.unwrap();
    let mut delete = Args::default();
    delete.map(a.as_mut_ptr(), 16, mt::DELETE);
    // SAFETY: `loc` is null; `delete`'s arrays stay in place for the call and map live host
    // data of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &delete.view()) }.unwrap();
    let dev = w.platform.dev(0, 0);
    assert_eq!(dev.table.len(), 1);
    // SAFETY: `loc` is null; `held`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &held.view()) }.unwrap();
    assert!(dev.table.is_empty());
}

#[test]
fn zero_length_section_of_null_pointer_is_fine() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut args = Args::default();
    args.push(
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        0,
        mt::TO | mt::FROM,
    );
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(w.stderr(), "");
}

#[test]
fn return_param_gives_the_device_address() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [0u64; 4];
    let mut enter = Args::default();
    enter.map(a.as_mut_ptr(), 32, mt::TO);
    // SAFETY: `loc` is null; `enter`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &enter.view()) }.unwrap();
    // use_device_ptr: a zero-size RETURN_PARAM lookup of a+1.
    let mut use_ptr = Args::default();
    // SAFETY: `a` has 2 elements, so `a + 1` is in bounds.
    let inner = unsafe { a.as_mut_ptr().add(1) };
    use_ptr.map(inner, 0, mt::RETURN_PARAM);
    // SAFETY: `loc` is null; `use_ptr`'s arrays stay in place for the call and map live host
    // data of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &use_ptr.view()) }.unwrap();
    let target = w
        .platform
        .dev(0, 0)
        .table
        .translate(a.as_ptr() as usize, 8)
        .unwrap();
    assert_eq!(use_ptr.bases[0] as usize, target + 8);
}

#[repr(C)]
struct WithPointer {
    tag: u64,
    data: *mut i32,
}

#[test]
fn ptr_and_obj_attaches_and_restores_host_pointer() {
    let (w, bin) = one_kernel_world(1);
    let off = w.off();
    let mut values = [1i32, 2, 3, 4];
    let mut s = WithPointer {
        tag: 7,
        data: values.as_mut_ptr(),
    };
    let s_ptr = &mut s as *mut WithPointer;
    // SAFETY: `s_ptr` points to the live local `s`; `addr_of_mut!` makes no reference.
    let data_field = unsafe { std::ptr::addr_of_mut!((*s_ptr).data) };
    let mut args = Args::default();
    args.map(
        s_ptr,
        std::mem::size_of::<WithPointer>(),
        mt::TO | mt::FROM | mt::TARGET_PARAM,
    );
    args.push(
        data_field as *mut c_void,
        values.as_mut_ptr() as *mut c_void,
        16,
        mt::TO | mt::FROM | mt::PTR_AND_OBJ | (1 << 48),
    );
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument.
        .kernel(bin.addrs[0], |args, offsets, _| unsafe {
            let s = (args[0] as usize).wrapping_add(offsets[0] as usize) as *mut WithPointer;
            (*s).tag += 1;
            for i in 0..4 {
                *(*s).data.add(i) *= 10;
            }
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
    assert_eq!(values, [10, 20, 30, 40]);
    assert_eq!(s.tag, 8);
    assert_eq!(
        s.data,
        values.as_mut_ptr(),
        "host pointer restored from its shadow"
    );
    let dev = w.platform.dev(0, 0);
    assert!(dev.table.is_empty());
    assert_eq!(dev.table.shadow_count(), 0);
    assert_eq!(dev.live_buffers(), 0);
    assert_eq!(w.stderr(), "");
}

#[test]
fn combined_struct_entry_is_padded_to_eight_bytes() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    #[repr(C, align(8))]
    struct S {
        a: i32,
        b: i32,
        c: [i32; 2],
    }
    let mut s = S {
        a: 1,
        b: 2,
        c: [3, 4],
    };
    let base = &mut s as *mut S as *mut c_void;
    let b = std::ptr::addr_of_mut!(s.b) as *mut c_void;
    // map(tofrom: s.b, s.c): combined entry from &s.b, members MEMBER_OF(1).
    let mut args = Args::default();
    args.push(base, b, 12, mt::TARGET_PARAM);
    args.push(base, b, 4, mt::TO | mt::FROM | (1 << 48));
    args.push(
        base,
        std::ptr::addr_of_mut!(s.c) as *mut c_void,
        8,
        mt::TO | mt::FROM | (1 << 48),
    );
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    let entries = w.platform.dev(0, 0).table.entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].host_begin, base as usize,
        "padded down from &s.b"
    );
    assert_eq!(entries[0].size(), 16);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert!(w.platform.dev(0, 0).table.is_empty());
}
