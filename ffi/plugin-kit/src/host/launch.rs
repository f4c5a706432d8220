//! Calling a kernel of a loaded image with any number of pointer arguments.

use libffi::middle::{Arg, Cif, CodePtr, Type};
use std::ffi::c_void;
use std::ptr::NonNull;

/// Call `entry(args[0], args[1], ...)` as a C function returning void whose
/// parameters are all pointer-sized, like LLVM's generic-elf-64bit plugin
/// (which passes every argument by reference).
///
/// # Safety
/// `entry` is the address of such a function, and calling it with `args`
/// is what the offload program intends.
pub unsafe fn call_with_pointer_args(entry: NonNull<c_void>, args: &[*mut c_void]) {
    let cif = Cif::new(args.iter().map(|_| Type::pointer()), Type::void());
    let values: Vec<Arg> = args.iter().map(Arg::new).collect();
    cif.call::<()>(CodePtr::from_ptr(entry.as_ptr()), &values);
}
