//! Golden output: `LIBOMPTARGET_INFO` output of whole programs against
//! LLVM 14's (`tests/fixtures/golden_*.txt`, addresses normalised).
//!
//! The files were LLVM 14's output for the programs each test describes.
//! To rewrite them from this runtime's output instead of comparing (after a
//! deliberate change of the output), run
//!
//! ```text
//! OMPTARGET_BLESS=1 cargo test -p omptarget-openmp --lib tests::golden
//! ```
//!
//! and review `git diff openmp/tests/fixtures`: every change must be one
//! LLVM 14 makes too, since the files stand for its output.

// Addresses become `0xADDR`: the tests' one rule, which the C differential
// suite uses too.
use super::*;
use omptarget_test_support::compare::normalise_addresses;

/// Compare `actual` with the golden file `tests/fixtures/$name`, or, with
/// `OMPTARGET_BLESS=1`, write `actual` to it (see the module docs).
macro_rules! check_golden {
    ($name:literal, $actual:expr) => {{
        let actual: String = $actual;
        if std::env::var_os("OMPTARGET_BLESS").is_some_and(|v| v == "1") {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join($name);
            std::fs::write(&path, &actual)
                .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        } else {
            let golden = include_str!(concat!("../../tests/fixtures/", $name));
            assert_eq!(actual, golden);
        }
    }};
}

unsafe extern "C" fn member_b_mapper(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    _size: i64,
    map_type: i64,
    name: *mut c_void,
) {
    // `declare mapper(pair p) map(tofrom: p.b)` for one element.
    let b = (begin as usize + 8) as *mut c_void;
    // SAFETY: the runtime calls this mapper with the live handle of its
    // `collect`, used on this thread only.
    unsafe { push_mapper_component(handle, base, b, 8, map_type & (mt::TO | mt::FROM), name) };
}

/// The INFO output of LLVM 14's libomptarget (LIBOMPTARGET_INFO=-1) for a
/// clang-14 program with `declare mapper(pair p) map(tofrom: p.b)`: enter
/// data `to: p`, a target region `tofrom: p`, exit data `from: p`, and the
/// table dump at exit. Replayed here call by call with the same arguments.
#[test]
fn mapper_program_info_output_matches_llvm() {
    let (w, bin) = one_kernel_world(1);
    w.registry.set_info_level(u32::MAX);
    let off = w.off();
    let mut pair = [1i64, 2i64];
    let p = pair.as_mut_ptr();
    let call = |map_type: i64| {
        let mut args = Args::default();
        args.map(p, 16, map_type);
        args.mappers[0] = member_b_mapper as *mut c_void;
        args
    };
    // SAFETY: `loc` is null; each `call(..)` is a temporary alive for its statement (or
    // `region`), naming the live 16-byte `pair` of this test, with `member_b_mapper` as the
    // compiler-style mapper of its argument; `bin.addrs[0]` is the kernel taking `region`'s
    // arguments.
    unsafe {
        off.target_data_begin(Loc::UNKNOWN, -1, &call(mt::TO).view())
            .unwrap();
        assert_eq!(off.target_is_present(p as *const c_void, 0), 0);
        let mut region = call(mt::TO | mt::FROM | mt::TARGET_PARAM);
        off.target(
            null(),
            -1,
            bin.addrs[0] as *mut c_void,
            &region.view(),
            0,
            0,
            false,
        )
        .unwrap();
        off.target_data_end(Loc::UNKNOWN, -1, &call(mt::FROM).view())
            .unwrap();
        assert_eq!(off.target_is_present(p as *const c_void, 0), 0);
    }
    off.dump_mappings_at_exit();
    check_golden!("golden_mapper_info.txt", normalise_addresses(&w.stderr()));
}

#[repr(C)]
struct CountAndPointer {
    n: i32,
    p: *mut i32,
}

/// LLVM 14's INFO output for this clang-14 program, whose argument arrays
/// were captured with an interposer on `__tgt_*`:
///
/// ```c
/// typedef struct { int n; int *p; } S;
/// #pragma omp declare target
/// int g[4] = {1,2,3,4};
/// #pragma omp end declare target
/// int data[4] = {1,2,3,4}; S s = {4, data}; int fp = 5;
/// #pragma omp target map(tofrom: s, s.p[0:4]) firstprivate(fp)
/// { for (int i = 0; i < s.n; i++) s.p[i] *= fp; s.n = 7; g[0] += 10; }
/// #pragma omp target update from(g)
/// ```
#[test]
fn struct_pointer_program_info_output_matches_llvm() {
    let w = World::mandatory(&[(TAG_A, 1)]);
    let bin = TestBinary::new(
        &[TAG_A],
        &[HostItem::Global { size: 16 }, HostItem::Kernel { flags: 0 }],
    );
    let g = bin.addrs[0] as *mut i32;
    // SAFETY: `g` is the binary's 16-byte global (4 `i32`), distinct from the temporary array
    // copied from.
    unsafe { std::ptr::copy_nonoverlapping([1i32, 2, 3, 4].as_ptr(), g, 4) };
    let off = w.off();
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { off.register_lib(bin.desc()) };
    w.registry.set_info_level(u32::MAX);

    let mut data = [1i32, 2, 3, 4];
    let mut s = CountAndPointer {
        n: 4,
        p: data.as_mut_ptr(),
    };
    let s_addr = &mut s as *mut CountAndPointer as *mut c_void;
    // SAFETY: `s_addr` points to the live local `s`; `addr_of_mut!` makes no reference.
    let p_field = unsafe { std::ptr::addr_of_mut!((*(s_addr as *mut CountAndPointer)).p) };
    let mut args = Args::default();
    args.push(s_addr, s_addr, 16, 0x20);
    args.push(s_addr, s_addr, 16, 0x1000000000003);
    args.push(
        p_field as *mut c_void,
        data.as_mut_ptr() as *mut c_void,
        16,
        0x1000000000013,
    );
    args.push(5 as *mut c_void, 5 as *mut c_void, 4, 0x120);

    let dev_addr = w.platform.dev(0, 0) as *const TestDevice as usize;
    let host_g = g as usize;
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument. `dev_addr` is the test device, alive for the
        // whole test, and `host_g` a global mapped on it.
        .kernel(bin.addrs[1], move |args, offsets, _| unsafe {
            let s = (args[0] as usize).wrapping_add(offsets[0] as usize) as *mut CountAndPointer;
            let fp = args[1] as usize as i32;
            for i in 0..(*s).n as usize {
                *(*s).p.add(i) *= fp;
            }
            (*s).n = 7;
            let dev = &*(dev_addr as *const TestDevice);
            let g = dev.table.translate(host_g, 4).unwrap() as *mut i32;
            *g += 10;
        });
    // SAFETY: `loc` is null; `bin.addrs[1]` is the kernel registered above, taking the
    // arguments `args` maps (the live `s`, `data` and a literal), whose arrays stay in place
    // during the call.
    unsafe {
        off.target(
            null(),
            -1,
            bin.addrs[1] as *mut c_void,
            &args.view(),
            0,
            0,
            false,
        )
        .unwrap();
        let mut update = Args::default();
        update.push(g as *mut c_void, g as *mut c_void, 16, 0x2);
        off.target_data_update(Loc::UNKNOWN, -1, &update.view())
            .unwrap();
    }
    assert_eq!(data, [5, 10, 15, 20]);
    assert_eq!(s.n, 7);
    assert_eq!(s.p, data.as_mut_ptr());
    // SAFETY: `g` is the binary's global, 4 live `i32`.
    assert_eq!(unsafe { *g }, 11);
    off.dump_mappings_at_exit();
    check_golden!("golden_ptr_info.txt", normalise_addresses(&w.stderr()));
}

#[test]
fn empty_platform_has_no_devices_and_host_memory_works() {
    let registry = Registry::new();
    let host = TestHost::new(TargetOffloadPolicy::Default);
    let off = Offload::new(&registry, &EmptyPlatform, &host);
    assert_eq!(off.num_devices(), 0);
    assert_eq!(off.initial_device(), 0);
    let p = off.target_alloc(16, 0, AllocKind::Default);
    assert!(!p.is_null());
    assert_eq!(off.target_is_present(p, 0), 1);
    assert!(off.target_alloc(16, 1, AllocKind::Default).is_null());
    // SAFETY: `p` was `malloc`ed by `target_alloc` for the initial device (device 0 of an empty
    // platform), freed once.
    unsafe { off.target_free(p, 0) };
    // SAFETY: `loc` is null; with no device the region falls back to the host before `host_ptr`
    // (a bogus address) is looked at, and `MapArgs::empty()` has no arrays.
    let rc = unsafe { off.target(null(), -1, 8 as *mut c_void, &MapArgs::empty(), 0, 0, false) };
    assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_FAIL));
    assert_eq!(host.take_stderr(), "");
}

/// LLVM 14's INFO output for this clang-14 program (argument arrays captured
/// with an interposer on `__tgt_*`), replayed call by call:
///
/// ```c
/// int a[8] = {0,1,2,3,4,5,6,7}, b[8] = {0}; int *p = b;
/// #pragma omp target enter data map(alloc: a[0:8])
/// #pragma omp target enter data map(always, to: a[2:4])
/// #pragma omp target data map(tofrom: b[0:8]) use_device_ptr(p)
/// { }
/// #pragma omp target update from(a[0:4])
/// #pragma omp target exit data map(release: a[0:8])
/// #pragma omp target exit data map(delete: a)
/// #pragma omp target teams distribute parallel for map(tofrom: b)
/// for (int i = 0; i < 8; i++) b[i] += i;
/// ```
#[test]
fn data_directives_program_info_output_matches_llvm() {
    let (w, bin) = one_kernel_world(1);
    w.registry.set_info_level(u32::MAX);
    let off = w.off();
    let mut a = [0i32, 1, 2, 3, 4, 5, 6, 7];
    let mut b = [0i32; 8];
    let pa = a.as_mut_ptr() as *mut c_void;
    let pb = b.as_mut_ptr() as *mut c_void;
    let one = |base: *mut c_void, begin: *mut c_void, size: i64, map_type: i64| {
        let mut args = Args::default();
        args.push(base, begin, size, map_type);
        args
    };
    let kernel_b = b.as_ptr() as usize;
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument.
        .kernel(bin.addrs[0], move |args, offsets, launch| unsafe {
            assert_eq!(launch.teams, Some((0, 0, 8)));
            let b = (args[0] as usize).wrapping_add(offsets[0] as usize) as *mut i32;
            assert_ne!(b as usize, kernel_b);
            for i in 0..8 {
                *b.add(i) += i as i32;
            }
        });
    // SAFETY: `loc` is null; each call's arrays are a temporary `Args` (alive for its
    // statement) or `region`, naming the live 32-byte `a`/`b` of this test as their map types
    // say, and `bin.addrs[0]` is the kernel taking `region`'s arguments.
    unsafe {
        off.target_data_begin(Loc::UNKNOWN, -1, &one(pa, pa, 32, 0x0).view())
            .unwrap();
        let a2 = (pa as usize + 8) as *mut c_void;
        off.target_data_begin(Loc::UNKNOWN, -1, &one(pa, a2, 16, 0x5).view())
            .unwrap();
        let mut region = one(pb, pb, 32, 0x3);
        region.push(pb, pb, 0, 0x40);
        off.target_data_begin(Loc::UNKNOWN, -1, &region.view())
            .unwrap();
        let device_b = w
            .platform
            .dev(0, 0)
            .table
            .translate(pb as usize, 32)
            .unwrap();
        assert_eq!(region.bases[1] as usize, device_b, "use_device_ptr");
        off.target_data_end(Loc::UNKNOWN, -1, &region.view())
            .unwrap();
        off.target_data_update(Loc::UNKNOWN, -1, &one(pa, pa, 16, 0x2).view())
            .unwrap();
        off.target_data_end(Loc::UNKNOWN, -1, &one(pa, pa, 32, 0x0).view())
            .unwrap();
        off.target_data_end(Loc::UNKNOWN, -1, &one(pa, pa, 32, 0x8).view())
            .unwrap();
        off.push_target_tripcount(Loc::UNKNOWN, -1, 8).unwrap();
        let teams = one(pb, pb, 32, 0x23);
        let mut teams = teams;
        off.target(
            null(),
            -1,
            bin.addrs[0] as *mut c_void,
            &teams.view(),
            0,
            0,
            true,
        )
        .unwrap();
    }
    assert_eq!((a[2], a[5]), (2, 5));
    assert_eq!((b[0], b[7]), (0, 7));
    off.dump_mappings_at_exit();
    check_golden!("golden_mix_info.txt", normalise_addresses(&w.stderr()));
}

/// LLVM 14's INFO output and results for a strided `target update` (clang
/// passes three dimension descriptors; LLVM 14 merges the middle one and,
/// as replayed here, copies one element per row):
///
/// ```c
/// int m[3][6] = {0}; int v[10] = {0};
/// #pragma omp target enter data map(to: m, v)
/// #pragma omp target
/// { m[i][j] = i * 10 + j for all i, j; v[i] = i + 1 for all i; }
/// #pragma omp target update from(m[0:2][1:3:2], v[1:4:2])
/// #pragma omp target exit data map(delete: m, v)
/// ```
#[test]
fn strided_update_program_matches_llvm() {
    let (w, bin) = one_kernel_world(1);
    w.registry.set_info_level(u32::MAX);
    let off = w.off();
    // The C program's stack layout: v below m (the table dump is in address
    // order).
    #[repr(C)]
    struct Frame {
        v: [i32; 10],
        pad: [i32; 2],
        m: [[i32; 6]; 3],
    }
    let mut frame = Frame {
        v: [0; 10],
        pad: [0; 2],
        m: [[0; 6]; 3],
    };
    let pm = frame.m.as_mut_ptr() as *mut c_void;
    let pv = frame.v.as_mut_ptr() as *mut c_void;
    w.platform
        .dev(0, 0)
        // SAFETY: the test device runs this kernel with the device addresses of the region's
        // arguments (its buffers, host memory) and their offsets, so each pointer below lies in
        // the object mapped for that argument.
        .kernel(bin.addrs[0], |args, offsets, _| unsafe {
            let m = (args[0] as usize).wrapping_add(offsets[0] as usize) as *mut i32;
            let v = (args[1] as usize).wrapping_add(offsets[1] as usize) as *mut i32;
            for i in 0..3 {
                for j in 0..6 {
                    *m.add(i * 6 + j) = (i * 10 + j) as i32;
                }
            }
            for i in 0..10 {
                *v.add(i) = i as i32 + 1;
            }
        });
    let mut dims = [
        TargetNonContig {
            offset: 0,
            count: 2,
            stride: 24,
        },
        TargetNonContig {
            offset: 1,
            count: 3,
            stride: 8,
        },
        TargetNonContig {
            offset: 0,
            count: 1,
            stride: 4,
        },
    ];
    // SAFETY: `loc` is null; `enter`/`region`/`update`/`exit` stay in place during each call
    // and name `frame`'s live `m` (72 bytes) and `v` (40 bytes); the non-contiguous descriptors
    // `dims` cut pieces inside `m`; `bin.addrs[0]` is the kernel taking `region`'s arguments.
    unsafe {
        let mut enter = Args::default();
        enter.push(pm, pm, 72, 0x1).push(pv, pv, 40, 0x1);
        off.target_data_begin(Loc::UNKNOWN, -1, &enter.view())
            .unwrap();
        let mut region = Args::default();
        region.push(pm, pm, 72, 0x223).push(pv, pv, 40, 0x223);
        off.target(
            null(),
            -1,
            bin.addrs[0] as *mut c_void,
            &region.view(),
            0,
            0,
            false,
        )
        .unwrap();
        let mut update = Args::default();
        update
            .push(pm, dims.as_mut_ptr() as *mut c_void, 3, 0x100000000002)
            .push(pv, (pv as usize + 4) as *mut c_void, 16, 0x2);
        off.target_data_update(Loc::UNKNOWN, -1, &update.view())
            .unwrap();
        let mut exit = Args::default();
        exit.push(pm, pm, 72, 0x8).push(pv, pv, 40, 0x8);
        off.target_data_end(Loc::UNKNOWN, -1, &exit.view()).unwrap();
    }
    assert_eq!(frame.m, [[0, 0, 2, 0, 0, 0], [0, 0, 12, 0, 0, 0], [0; 6]]);
    assert_eq!(frame.v, [0, 2, 3, 4, 5, 0, 0, 0, 0, 0]);
    assert_eq!(frame.pad, [0; 2]);
    off.dump_mappings_at_exit();
    check_golden!(
        "golden_noncontig_info.txt",
        normalise_addresses(&w.stderr())
    );
}
