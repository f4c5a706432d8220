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
    unsafe { off.target_data_begin(null(), 0, &args.view()) }.unwrap();
    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map live host data
    // of this test, as their map types say.
    unsafe { off.target_data_end(null(), 0, &args.view()) }.unwrap();
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
    unsafe { off.target_data_begin(null(), 0, &args.view()) }.unwrap();
    assert_eq!(w.stderr(), "");
}
