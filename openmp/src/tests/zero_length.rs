//! Zero-length sections by release: a pointer whose data was mapped as a
//! section that does not start at it is found by that section's base from
//! LLVM 19 on (implicit captures, `use_device_ptr`); a region argument the
//! table does not know keeps its host value from LLVM 19 on; LLVM 19+'s
//! INFO line for an explicit zero-length map that found nothing. And the
//! caller's release is asked only where a zero length needs it.

use super::*;
use crate::release::Release;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

const RELEASES: [Release; 3] = [Release::Llvm14, Release::Llvm19, Release::Llvm22];

/// `p[16:32]` of floats: entered with `to`, the section 64 bytes past `p`.
fn enter_section(off: &Offload<'_>, p: *mut f32) {
    let mut args = Args::default();
    // SAFETY: `p` points to at least 48 floats (the callers' buffers).
    let begin = unsafe { p.add(16) };
    args.push(p as *mut c_void, begin as *mut c_void, 32 * 4, mt::TO);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and
    // name the live buffer behind `p`.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
}

/// Run the one kernel with `args`, returning its first argument.
fn first_kernel_argument(w: &World, bin: &TestBinary, args: &mut Args) -> usize {
    let seen = Arc::new(Mutex::new(None));
    let seen2 = seen.clone();
    w.platform
        .dev(0, 0)
        .kernel(bin.addrs[0], move |args, _, _| {
            *seen2.lock().unwrap() = Some(args[0] as usize);
        });
    // SAFETY: `loc` is null; `bin.addrs[0]` is a kernel of the registered
    // binary; `args`'s arrays stay in place for the call and name live host
    // data of the caller (the kernel does not dereference them).
    unsafe {
        w.off().target(
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
    let first = seen.lock().unwrap().expect("the kernel ran");
    first
}

#[test]
fn an_implicit_pointer_below_its_section_is_found_by_base_from_llvm19() {
    for release in RELEASES {
        let (w, bin) = one_kernel_world(1);
        *w.host.release.lock().unwrap() = release;
        let mut buf = [0f32; 64];
        let p = buf.as_mut_ptr();
        enter_section(&w.off(), p);
        let section = p as usize + 64;
        let device_section = w.platform.dev(0, 0).table.translate(section, 4).unwrap();
        let mut args = Args::default();
        args.map(p, 0, mt::TARGET_PARAM | mt::IMPLICIT);
        let got = first_kernel_argument(&w, &bin, &mut args);
        let expected = match release {
            Release::Llvm14 => 0,
            _ => device_section - 64,
        };
        assert_eq!(got, expected, "{release:?}");
        // Found or not, the region leaves the section's count as it was.
        let refs = w.platform.dev(0, 0).table.entries()[0].refs;
        assert_eq!(refs.dynamic, 1, "{release:?}");
    }
}

#[test]
fn an_unknown_region_pointer_keeps_its_host_value_from_llvm19() {
    for release in RELEASES {
        let (w, bin) = one_kernel_world(1);
        *w.host.release.lock().unwrap() = release;
        let mut unmapped = [0i32; 2];
        let mut args = Args::default();
        args.map(unmapped.as_mut_ptr(), 0, mt::TARGET_PARAM | mt::IMPLICIT);
        let got = first_kernel_argument(&w, &bin, &mut args);
        let expected = match release {
            Release::Llvm14 => 0,
            _ => unmapped.as_ptr() as usize,
        };
        assert_eq!(got, expected, "{release:?}");
        assert!(w.platform.dev(0, 0).table.is_empty());
    }
}

#[test]
fn use_device_ptr_of_a_pointer_below_its_section_from_llvm19() {
    for release in RELEASES {
        let (w, _bin) = one_kernel_world(1);
        *w.host.release.lock().unwrap() = release;
        let mut buf = [0f32; 64];
        let p = buf.as_mut_ptr();
        enter_section(&w.off(), p);
        let device_section = w
            .platform
            .dev(0, 0)
            .table
            .translate(p as usize + 64, 4)
            .unwrap();
        let mut args = Args::default();
        args.map(p, 0, mt::RETURN_PARAM);
        // SAFETY: `loc` is null; `args`'s arrays stay in place for the call
        // (its base array is written).
        unsafe { w.off().target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
        let expected = match release {
            // LLVM 14 finds nothing: null.
            Release::Llvm14 => 0,
            _ => device_section - 64,
        };
        assert_eq!(args.bases[0] as usize, expected, "{release:?}");
    }
}

#[test]
fn an_explicit_zero_length_map_that_finds_nothing_is_reported_from_llvm19() {
    for release in RELEASES {
        let (w, _bin) = one_kernel_world(1);
        *w.host.release.lock().unwrap() = release;
        w.registry.set_info_level(crate::info::INFO_EMPTY_MAPPING);
        let mut x = 0usize;
        let name = CString::new(";x;t.c;3;1;;").unwrap();
        let mut args = Args::default();
        args.map(&mut x as *mut usize, 0, mt::RETURN_PARAM);
        args.map(&mut x as *mut usize, 0, mt::IMPLICIT);
        args.names[0] = name.as_ptr() as *mut c_void;
        // SAFETY: `loc` is null; `args`'s arrays stay in place for the call
        // (its base array is written).
        unsafe { w.off().target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
        let expected = match release {
            Release::Llvm14 => String::new(),
            // The implicit entry says nothing. (The test host words every
            // line as LLVM 14 does; the shim words it as the caller's.)
            _ => {
                "Libomptarget device 0 info: variable x does not have a valid device counterpart\n"
                    .to_string()
            }
        };
        assert_eq!(w.stderr(), expected, "{release:?}");
    }
}

/// The shim answers the release by walking the stack: a region whose
/// arguments all have a length never asks, and one with zero-length ones
/// asks once in each step (mapping, arguments, unmapping), not once per
/// argument.
#[test]
fn the_release_is_asked_only_for_zero_lengths() {
    let (w, bin) = one_kernel_world(1);
    *w.host.release.lock().unwrap() = Release::Llvm22;
    let mut a = [0i32; 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM | mt::TARGET_PARAM);
    first_kernel_argument(&w, &bin, &mut args);
    assert_eq!(w.host.release_asked.load(Ordering::SeqCst), 0);
    let mut zero = Args::default();
    zero.map(a.as_mut_ptr(), 0, mt::TARGET_PARAM | mt::IMPLICIT);
    zero.map(a.as_mut_ptr(), 0, mt::TARGET_PARAM | mt::IMPLICIT);
    first_kernel_argument(&w, &bin, &mut zero);
    assert_eq!(w.host.release_asked.load(Ordering::SeqCst), 3);
}
