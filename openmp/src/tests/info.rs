//! `LIBOMPTARGET_INFO` lines in LLVM's format.

use super::*;

#[test]
fn info_lines_follow_llvm_format() {
    let (w, _bin) = one_kernel_world(1);
    w.registry
        .set_info_level(crate::info::INFO_MAPPING_CHANGED | crate::info::INFO_MAPPING_EXISTS);
    let off = w.off();
    let mut a = [0u8; 4];
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 4, mt::TO);
    let name = CString::new(";a[0:4];t.c;3;1;;").unwrap();
    args.names[0] = name.as_ptr() as *mut c_void;
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    let target = w.stderr();
    let lines: Vec<&str> = target.lines().collect();
    assert_eq!(lines.len(), 3, "{target}");
    assert!(lines[0].starts_with(&format!(
        "Libomptarget device 0 info: Creating new map entry with HstPtrBegin={}, TgtPtrBegin=0x",
        hex(a.as_ptr() as *const c_void)
    )));
    assert!(lines[0].ends_with(", Size=4, DynRefCount=1, HoldRefCount=0, Name=a[0:4]"));
    assert!(lines[1].contains("Mapping exists with HstPtrBegin="));
    assert!(lines[1].ends_with("Size=4, DynRefCount=1 (deferred final decrement), HoldRefCount=0"));
    assert!(lines[2].starts_with("Libomptarget device 0 info: Removing map entry with"));
    assert!(lines[2].ends_with("Size=4, Name=a[0:4]"));
    // With LIBOMPTARGET_DEBUG set, a release LLVM prints no INFO at all.
    w.registry.set_debug_level(1);
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(w.stderr(), "");
}

/// The same construct as an LLVM 19 (and 22) caller sees it: the new
/// entry's base and allocation, the final decrement made by the data
/// end's query, and the data region's entry point named.
#[test]
fn info_lines_follow_the_callers_release() {
    for release in [crate::Release::Llvm19, crate::Release::Llvm22] {
        let (w, _bin) = one_kernel_world(1);
        *w.host.release.lock().unwrap() = release;
        w.registry.set_info_level(u32::MAX);
        let off = w.off();
        let mut a = [0u8; 4];
        let mut args = Args::default();
        args.map(a.as_mut_ptr(), 4, mt::TO);
        // SAFETY: `loc` is null; `args`'s arrays stay in place for the
        // call and map live host data of this test, as their map types say.
        unsafe { off.target_data_begin_as(Loc::UNKNOWN, 0, &args.view(), true) }.unwrap();
        // SAFETY: as above.
        unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
        let out = normalise(&w.stderr());
        let expected = [
            "Entering OpenMP data region with being_nowait_mapper at unknown:0:0 with 1 arguments:",
            "to(unknown)[4] ",
            "Creating new map entry with HstPtrBase=0xADDR, HstPtrBegin=0xADDR, \
             TgtAllocBegin=0xADDR, TgtPtrBegin=0xADDR, Size=4, DynRefCount=1, HoldRefCount=0, \
             Name=unknown",
            "Copying data from host to device, HstPtr=0xADDR, TgtPtr=0xADDR, Size=4, Name=unknown",
            "OpenMP Host-Device pointer mappings after block at unknown:0:0:",
            "Host Ptr           Target Ptr         Size (B) DynRefCount HoldRefCount Declaration",
            "0xADDR 0xADDR 4        1           0            unknown at unknown:0:0",
            "Exiting OpenMP data region with end_mapper at unknown:0:0 with 1 arguments:",
            "to(unknown)[4] ",
            "Mapping exists with HstPtrBegin=0xADDR, TgtPtrBegin=0xADDR, Size=4, \
             DynRefCount=0 (decremented, delayed deletion), HoldRefCount=0",
            "Removing map entry with HstPtrBegin=0xADDR, TgtPtrBegin=0xADDR, Size=4, Name=unknown",
            "OpenMP Host-Device pointer mappings table empty",
        ];
        let lines: Vec<&str> = out
            .lines()
            .map(|l| l.trim_start_matches("Libomptarget device 0 info: "))
            .collect();
        assert_eq!(lines, expected, "{release:?}");
    }
}

fn normalise(text: &str) -> String {
    omptarget_test_support::compare::normalise_addresses(text)
}
