//! `target update`: to, from, `present` motion and non-contiguous updates.

use super::*;

#[test]
fn update_to_and_from_and_present_motion() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    let mut a = [1i32; 4];
    let mut enter = Args::default();
    enter.map(a.as_mut_ptr(), 16, mt::NONE);
    // SAFETY: `loc` is null; `enter`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &enter.view()) }.unwrap();
    let target = w
        .platform
        .dev(0, 0)
        .table
        .translate(a.as_ptr() as usize, 16)
        .unwrap();
    // SAFETY: `target` is the test device's buffer (host memory) of the 16 mapped bytes, 4
    // aligned `i32`; test-only aliasing: the runtime writes it through raw pointers only inside
    // the calls below, between the test's uses of `dev_a`.
    let dev_a = unsafe { std::slice::from_raw_parts_mut(target as *mut i32, 4) };
    assert_eq!(dev_a, &[0; 4], "alloc copies nothing");
    let mut to = Args::default();
    to.map(a.as_mut_ptr(), 16, mt::TO);
    // SAFETY: `loc` is null; `to`'s arrays stay in place for the call and map live host data of
    // this test, as their map types say.
    unsafe { off.target_data_update(Loc::UNKNOWN, 0, &to.view()) }.unwrap();
    assert_eq!(dev_a, &[1; 4]);
    dev_a[2] = 9;
    let mut from = Args::default();
    // SAFETY: `a` has 4 elements, so `a + 2` is in bounds.
    from.map(unsafe { a.as_mut_ptr().add(2) }, 4, mt::FROM);
    // SAFETY: `loc` is null; `from`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_update(Loc::UNKNOWN, 0, &from.view()) }.unwrap();
    assert_eq!(a, [1, 1, 9, 1]);
    // Not mapped: a no-op, unless `present`.
    let mut b = [0i32; 2];
    let mut other = Args::default();
    other.map(b.as_mut_ptr(), 8, mt::FROM);
    // SAFETY: `loc` is null; `other`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_update(Loc::UNKNOWN, 0, &other.view()) }.unwrap();
    assert_eq!(w.stderr(), "");
    let mut present = Args::default();
    present.map(b.as_mut_ptr(), 8, mt::FROM | mt::PRESENT);
    // SAFETY: `loc` is null; `present`'s arrays stay in place for the call and map live host
    // data of this test, as their map types say.
    assert!(unsafe { off.target_data_update(Loc::UNKNOWN, 0, &present.view()) }.is_err());
    assert_eq!(
        w.stderr(),
        format!(
            "Libomptarget message: device mapping required by 'present' motion modifier does not exist for host address {} (8 bytes)\n{CONSULT}{NO_SOURCE}",
            hex(b.as_ptr() as *const c_void)
        )
    );
}

#[test]
fn non_contiguous_update_copies_each_strided_piece() {
    let (w, _bin) = one_kernel_world(1);
    let off = w.off();
    // int m[3][4]; update from(m[0:3][1:2]).
    let mut m = [[0i32; 4]; 3];
    let mut enter = Args::default();
    enter.map(m.as_mut_ptr(), 48, mt::NONE);
    // SAFETY: `loc` is null; `enter`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &enter.view()) }.unwrap();
    let target = w
        .platform
        .dev(0, 0)
        .table
        .translate(m.as_ptr() as usize, 48)
        .unwrap();
    // SAFETY: `target` is the test device's buffer (host memory) of the 48 mapped bytes, 12
    // aligned `i32`; the runtime reads it only inside the call below, after the test's writes.
    let dev_m = unsafe { std::slice::from_raw_parts_mut(target as *mut i32, 12) };
    for (i, v) in dev_m.iter_mut().enumerate() {
        *v = i as i32 + 1;
    }
    let mut dims = [
        TargetNonContig {
            offset: 0,
            count: 3,
            stride: 16,
        },
        TargetNonContig {
            offset: 1,
            count: 2,
            stride: 4,
        },
    ];
    let mut args = Args::default();
    args.push(
        m.as_mut_ptr() as *mut c_void,
        dims.as_mut_ptr() as *mut c_void,
        2,
        mt::FROM | mt::NON_CONTIG,
    );
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_update(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(m, [[0, 2, 3, 0], [0, 6, 7, 0], [0, 10, 11, 0]]);
}
