//! User-defined mappers.

use super::*;

unsafe extern "C" fn pair_mapper(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
) {
    // Map the struct (as clang's mappers do: the whole object first, then
    // its members as MEMBER_OF the first component).
    // SAFETY: the runtime calls this mapper with the live handle of its
    // `collect`, used on this thread only.
    let n = unsafe { mapper_num_components(handle) };
    // SAFETY: as above.
    unsafe {
        push_mapper_component(
            handle,
            base,
            begin,
            size,
            map_type & !(mt::TO | mt::FROM),
            name,
        )
    };
    let second = (begin as usize + 8) as *mut c_void;
    // SAFETY: as above.
    unsafe {
        push_mapper_component(
            handle,
            base,
            second,
            8,
            (map_type & (mt::TO | mt::FROM)) | ((n + 1) << 48),
            name,
        )
    };
}

#[test]
fn user_defined_mapper_maps_the_components() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut pair = [1u64, 2u64];
    let mut args = Args::default();
    args.map(pair.as_mut_ptr(), 16, mt::TO | mt::FROM);
    args.mappers[0] = pair_mapper as *mut c_void;
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    let dev = w.platform.dev(0, 0);
    let entries = dev.table.entries();
    assert_eq!(entries.len(), 1);
    let target = entries[0].device_begin;
    // SAFETY: `target` is the test device's buffer (host memory) of the mapped 16-byte `pair`,
    // 2 aligned `u64`; the runtime touches it only inside the call below, after the test's last
    // write.
    let dev_pair = unsafe { std::slice::from_raw_parts_mut(target as *mut u64, 2) };
    assert_eq!(dev_pair[1], 2, "member copied in");
    dev_pair[0] = 10;
    dev_pair[1] = 20;
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(pair, [1, 20], "only the member is copied out");
    // LLVM 14 never updates the count of a mapper's first component, nor
    // deletes it: the mapping stays (checked against LLVM's libomptarget
    // with LIBOMPTARGET_INFO on a clang-14 `declare mapper` program).
    assert_eq!(dev.table.len(), 1);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_update(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
}
