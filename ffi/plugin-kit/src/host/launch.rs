//! Calling a kernel of a loaded image with any number of pointer arguments.
//!
//! A kernel launch is on the hot path of every target region, so the common
//! case costs no allocation and no libffi call: up to [`DIRECT_MAX_ARGS`]
//! arguments, the entry is called through a function pointer of the exact
//! C type (`void (*)(void *, ..., void *)` with that many parameters), which
//! is what a libffi call with all-pointer argument types amounts to. Longer
//! argument lists go through libffi, which builds its call interface on the
//! heap per call. Nothing is cached, so the plugin keeps no launch state
//! to free at unload.

use libffi::middle::{Arg, Cif, CodePtr, Type};
use std::ffi::c_void;
use std::ptr::NonNull;

/// The most arguments a kernel is called with directly, without libffi.
pub const DIRECT_MAX_ARGS: usize = 16;

/// The type of one kernel argument as the C ABI sees it.
type Ptr = *mut c_void;

/// Call `entry(args[0], args[1], ...)` as a C function returning void whose
/// parameters are all pointer-sized, like LLVM's generic-elf-64bit plugin
/// (which passes every argument by reference).
///
/// # Safety
/// `entry` is the address of such a function, and calling it with `args`
/// is what the offload program intends.
pub unsafe fn call_with_pointer_args(entry: NonNull<c_void>, args: &[*mut c_void]) {
    if !call_direct(entry, args) {
        call_through_libffi(entry, args);
    }
}

/// Call `entry` through a function pointer of its C type when `args` has
/// at most [`DIRECT_MAX_ARGS`] elements; false (and no call) otherwise.
///
/// # Safety
/// As [`call_with_pointer_args`].
unsafe fn call_direct(entry: NonNull<c_void>, args: &[*mut c_void]) -> bool {
    /// One match arm per arity: `n => [indices]` calls `entry` with
    /// `args[i]` for each index, through `unsafe extern "C" fn(Ptr, ...)`.
    macro_rules! by_arity {
        ($($n:literal => [$($i:literal),*]),* $(,)?) => {
            match args.len() {
                $($n => {
                    // SAFETY (of the transmute and the call): per this
                    // function's contract, `entry` is a C function taking
                    // exactly `args.len()` pointer-sized arguments; a code
                    // address and a fn pointer have the same size.
                    let kernel: unsafe extern "C" fn($(by_arity!(@ptr $i)),*) =
                        std::mem::transmute::<*mut c_void, _>(entry.as_ptr());
                    kernel($(args[$i]),*);
                    true
                })*
                _ => false,
            }
        };
        (@ptr $i:literal) => { Ptr };
    }
    by_arity! {
        0 => [],
        1 => [0],
        2 => [0, 1],
        3 => [0, 1, 2],
        4 => [0, 1, 2, 3],
        5 => [0, 1, 2, 3, 4],
        6 => [0, 1, 2, 3, 4, 5],
        7 => [0, 1, 2, 3, 4, 5, 6],
        8 => [0, 1, 2, 3, 4, 5, 6, 7],
        9 => [0, 1, 2, 3, 4, 5, 6, 7, 8],
        10 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        11 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        12 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        13 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        14 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
        15 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
        16 => [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    }
}

/// Call `entry` with any number of pointer arguments through libffi.
///
/// # Safety
/// As [`call_with_pointer_args`].
unsafe fn call_through_libffi(entry: NonNull<c_void>, args: &[*mut c_void]) {
    let cif = Cif::new(args.iter().map(|_| Type::pointer()), Type::void());
    let values: Vec<Arg> = args.iter().map(Arg::new).collect();
    cif.call::<()>(CodePtr::from_ptr(entry.as_ptr()), &values);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// What the last test kernel saw: a checksum of its arguments.
    static SEEN: AtomicUsize = AtomicUsize::new(0);

    /// Positionally weighted sum, so swapped arguments change it.
    fn checksum(args: &[*mut c_void]) -> usize {
        args.iter()
            .enumerate()
            .map(|(i, a)| (i + 1).wrapping_mul(*a as usize))
            .fold(0, usize::wrapping_add)
    }

    extern "C" fn kernel0() {
        SEEN.store(usize::MAX, Ordering::SeqCst);
    }

    extern "C" fn kernel3(a: Ptr, b: Ptr, c: Ptr) {
        SEEN.store(checksum(&[a, b, c]), Ordering::SeqCst);
    }

    #[allow(clippy::too_many_arguments)]
    extern "C" fn kernel16(
        a0: Ptr,
        a1: Ptr,
        a2: Ptr,
        a3: Ptr,
        a4: Ptr,
        a5: Ptr,
        a6: Ptr,
        a7: Ptr,
        a8: Ptr,
        a9: Ptr,
        a10: Ptr,
        a11: Ptr,
        a12: Ptr,
        a13: Ptr,
        a14: Ptr,
        a15: Ptr,
    ) {
        let all = [
            a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
        ];
        SEEN.store(checksum(&all), Ordering::SeqCst);
    }

    #[allow(clippy::too_many_arguments)]
    extern "C" fn kernel18(
        a0: Ptr,
        a1: Ptr,
        a2: Ptr,
        a3: Ptr,
        a4: Ptr,
        a5: Ptr,
        a6: Ptr,
        a7: Ptr,
        a8: Ptr,
        a9: Ptr,
        a10: Ptr,
        a11: Ptr,
        a12: Ptr,
        a13: Ptr,
        a14: Ptr,
        a15: Ptr,
        a16: Ptr,
        a17: Ptr,
    ) {
        let all = [
            a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
        ];
        SEEN.store(checksum(&all), Ordering::SeqCst);
    }

    fn args(n: usize) -> Vec<Ptr> {
        (0..n).map(|i| (0x1000 + i * 0x10) as Ptr).collect()
    }

    fn call(entry: *const (), args: &[Ptr]) -> usize {
        SEEN.store(0, Ordering::SeqCst);
        let entry = NonNull::new(entry as *mut c_void).unwrap();
        // SAFETY: each test kernel takes exactly `args.len()` pointers.
        unsafe { call_with_pointer_args(entry, args) };
        SEEN.load(Ordering::SeqCst)
    }

    #[test]
    fn direct_calls_pass_every_argument_in_order() {
        assert_eq!(call(kernel0 as *const (), &[]), usize::MAX);
        let three = args(3);
        assert_eq!(call(kernel3 as *const (), &three), checksum(&three));
        let sixteen = args(DIRECT_MAX_ARGS);
        assert_eq!(call(kernel16 as *const (), &sixteen), checksum(&sixteen));
    }

    #[test]
    fn more_than_sixteen_arguments_go_through_libffi() {
        let eighteen = args(18);
        assert_eq!(call(kernel18 as *const (), &eighteen), checksum(&eighteen));
    }
}
