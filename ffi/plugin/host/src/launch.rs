//! Calling a kernel of a loaded image with any number of pointer arguments.
//!
//! Up to [`DIRECT_ARGS`] pointer arguments, the kernel is called directly
//! through a function type of that arity. Beyond, and for typed arguments,
//! the call goes through libffi (its low layer): the call interface is
//! prepared on the stack for each launch, with the argument-type and
//! argument-address arrays on the stack up to [`INLINE_ARGS`] arguments (the
//! plugin kit's entry layer keeps as many argument values on the stack) and
//! on the heap beyond. So a launch allocates nothing for common kernels, and
//! any arity works without a hand-written table of function types.

use libffi::low::{
    call, ffi_abi, ffi_abi_FFI_DEFAULT_ABI, ffi_cif, ffi_type, prep_cif, types, CodePtr,
};
use omptarget_plugin_kit::abi::plugin::KernelArgType;
pub use omptarget_plugin_kit::entry_bodies::INLINE_ARGS;
use std::ffi::c_void;
use std::ptr::{addr_of_mut, NonNull};

/// Call `entry(args[0], args[1], ...)` as a C function returning void whose
/// parameters are all pointer-sized, like LLVM's generic-elf-64bit plugin
/// (which passes every argument by reference).
///
/// A kernel that ends its thread (`pthread_exit`, or a cancellation acted
/// upon inside it) is intercepted here, before any frame of ours: the
/// call returns `Ok` with the exit pending
/// ([`omptarget_thread_exit::set_pending`]), and the plugin's entry resumes
/// it past its panic boundary.
///
/// # Safety
/// `entry` is the address of such a function, and calling it with `args`
/// is what the offload program intends.
pub unsafe fn call_with_pointer_args(
    entry: NonNull<c_void>,
    args: &[*mut c_void],
) -> Result<(), String> {
    if args.len() <= DIRECT_ARGS {
        let exited = omptarget_thread_exit::call_intercepting_exit(|| {
            // SAFETY: per this function's contract; at most DIRECT_ARGS.
            unsafe { call_direct(entry, args) }
        });
        if let Err(exit) = exited {
            omptarget_thread_exit::set_pending(exit);
        }
        return Ok(());
    }
    // SAFETY: per this function's contract.
    unsafe { call_with_abi(ffi_abi_FFI_DEFAULT_ABI, entry, args, None) }
}

/// Kernels with at most this many arguments are called directly, through a
/// function type of that many pointers; libffi takes the rest. A direct
/// call passes pointer-sized arguments exactly as libffi's pointer type
/// does (integer registers, then the stack), without preparing a call
/// interface per launch: callgrind per op, `empty_region` 1,881 -> 1,615
/// instructions (BENCHMARKS.md).
pub const DIRECT_ARGS: usize = 16;

/// `entry(args...)` through a function type with `args.len()` pointer
/// parameters.
///
/// # Safety
/// As [`call_with_pointer_args`], and `args.len() <= DIRECT_ARGS`.
unsafe fn call_direct(entry: NonNull<c_void>, args: &[*mut c_void]) {
    macro_rules! arities {
        ($($n:literal: ($($i:literal),*);)*) => {
            match args.len() {
                $($n => {
                    // "C-unwind": a kernel's `pthread_exit` unwinds through
                    // this frame to the trampoline's.
                    type Kernel = unsafe extern "C-unwind" fn($(arities!(@pointer $i)),*);
                    // SAFETY: `entry` is a function of `$n` pointer-sized
                    // parameters returning void (our contract).
                    let kernel = unsafe { std::mem::transmute::<*mut c_void, Kernel>(entry.as_ptr()) };
                    // SAFETY: as above; `args` has `$n` values.
                    unsafe { kernel($(args[$i]),*) }
                })*
                n => unreachable!("{n} arguments for a direct call"),
            }
        };
        (@pointer $i:literal) => { *mut c_void };
    }
    arities! {
        0: ();
        1: (0);
        2: (0, 1);
        3: (0, 1, 2);
        4: (0, 1, 2, 3);
        5: (0, 1, 2, 3, 4);
        6: (0, 1, 2, 3, 4, 5);
        7: (0, 1, 2, 3, 4, 5, 6);
        8: (0, 1, 2, 3, 4, 5, 6, 7);
        9: (0, 1, 2, 3, 4, 5, 6, 7, 8);
        10: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
        11: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        12: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        13: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
        14: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13);
        15: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
        16: (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
}

/// Call `entry(args...)` as a C function returning void whose parameters
/// have the C types `types` (one per argument): a `float` travels in an
/// SSE register, not in the integer register a pointer-sized slot would
/// use. Each value sits in the low bytes of its slot (x86_64 is little
/// endian, so the slot's address is the value's address).
///
/// # Safety
/// `entry` is the address of such a function.
pub unsafe fn call_with_typed_args(
    entry: NonNull<c_void>,
    args: &[*mut c_void],
    types: &[KernelArgType],
) -> Result<(), String> {
    if types.len() != args.len() {
        return Err(format!(
            "{} arguments but {} types",
            args.len(),
            types.len()
        ));
    }
    // SAFETY: per this function's contract.
    unsafe { call_with_abi(ffi_abi_FFI_DEFAULT_ABI, entry, args, Some(types)) }
}

/// libffi's descriptor of `ty` (a static libffi only reads).
fn ffi_type_of(ty: KernelArgType) -> *mut ffi_type {
    match ty {
        KernelArgType::Pointer => addr_of_mut!(types::pointer),
        KernelArgType::F32 => addr_of_mut!(types::float),
        KernelArgType::F64 => addr_of_mut!(types::double),
        KernelArgType::I8 => addr_of_mut!(types::sint8),
        KernelArgType::U8 => addr_of_mut!(types::uint8),
        KernelArgType::I16 => addr_of_mut!(types::sint16),
        KernelArgType::U16 => addr_of_mut!(types::uint16),
        KernelArgType::I32 => addr_of_mut!(types::sint32),
        KernelArgType::U32 => addr_of_mut!(types::uint32),
        KernelArgType::I64 => addr_of_mut!(types::sint64),
        KernelArgType::U64 => addr_of_mut!(types::uint64),
    }
}

/// [`call_with_pointer_args`] with the calling convention `abi`; a separate
/// function so that a test can make libffi refuse the call interface.
///
/// # Safety
/// As [`call_with_pointer_args`].
unsafe fn call_with_abi(
    abi: ffi_abi,
    entry: NonNull<c_void>,
    args: &[*mut c_void],
    typed: Option<&[KernelArgType]>,
) -> Result<(), String> {
    let n = args.len();
    // libffi's type descriptors are statics that libffi only reads.
    let pointer: *mut ffi_type = addr_of_mut!(types::pointer);
    let void: *mut ffi_type = addr_of_mut!(types::void);
    let mut inline_types = [pointer; INLINE_ARGS];
    let mut inline_values = [std::ptr::null_mut::<c_void>(); INLINE_ARGS];
    let (mut heap_types, mut heap_values) = (Vec::new(), Vec::new());
    let (arg_types, arg_values): (&mut [*mut ffi_type], &mut [*mut c_void]) = if n <= INLINE_ARGS {
        (&mut inline_types[..n], &mut inline_values[..n])
    } else {
        heap_types.resize(n, pointer);
        heap_values.resize(n, std::ptr::null_mut());
        (&mut heap_types, &mut heap_values)
    };
    // libffi takes the address of each argument's value.
    for (slot, arg) in arg_values.iter_mut().zip(args) {
        *slot = arg as *const *mut c_void as *mut c_void;
    }
    if let Some(typed) = typed {
        for (ty, arg_type) in typed.iter().zip(arg_types.iter_mut()) {
            *arg_type = ffi_type_of(*ty);
        }
    }
    let mut cif = ffi_cif::default();
    // SAFETY: `cif` and the type array outlive the call; all types are
    // libffi's own descriptors.
    let prepared = unsafe { prep_cif(&mut cif, abi, n, void, arg_types.as_mut_ptr()) };
    // ffi_prep_cif fails only for a bad ABI or type, neither of which
    // should happen here; never call through a half-prepared interface.
    if let Err(err) = prepared {
        return Err(format!(
            "libffi cannot prepare a call with {n} {} arguments: {err:?}",
            if typed.is_some() { "typed" } else { "pointer" }
        ));
    }
    let values = arg_values.as_mut_ptr();
    let exited = omptarget_thread_exit::call_intercepting_exit(|| {
        // SAFETY: per this function's contract; `arg_values` points to `n`
        // pointer-sized values that live until the call returns.
        unsafe { call::<()>(&mut cif, CodePtr::from_ptr(entry.as_ptr()), values) }
    });
    if let Err(exit) = exited {
        omptarget_thread_exit::set_pending(exit);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    /// `extern "C" fn $name($args: usize...)` storing the weighted sum
    /// of its arguments, so that a swapped or dropped argument changes it.
    macro_rules! weighted_kernel {
        ($(#[$doc:meta])* $name:ident($($arg:ident),*)) => {
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            extern "C" fn $name($($arg: usize),*) {
                let all = [$($arg),*];
                SEEN.store(
                    all.iter().enumerate().map(|(i, v)| (i + 1) * v).sum(),
                    Ordering::SeqCst,
                );
            }
        };
    }

    weighted_kernel!(
        /// 0 arguments: no arguments.
        k0()
    );
    weighted_kernel!(k1(a0));
    weighted_kernel!(k2(a0, a1));
    weighted_kernel!(k3(a0, a1, a2));
    weighted_kernel!(k4(a0, a1, a2, a3));
    weighted_kernel!(k5(a0, a1, a2, a3, a4));
    weighted_kernel!(k6(a0, a1, a2, a3, a4, a5));
    weighted_kernel!(k7(a0, a1, a2, a3, a4, a5, a6));
    weighted_kernel!(k8(a0, a1, a2, a3, a4, a5, a6, a7));
    weighted_kernel!(k9(a0, a1, a2, a3, a4, a5, a6, a7, a8));
    weighted_kernel!(k10(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9));
    weighted_kernel!(k11(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10));
    weighted_kernel!(k12(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11));
    weighted_kernel!(k13(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12));
    weighted_kernel!(k14(
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13
    ));
    weighted_kernel!(k15(
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14
    ));
    weighted_kernel!(
        /// 16 arguments: the most a direct call takes (ten on the stack).
        k16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)
    );
    weighted_kernel!(
        /// 17 arguments: the fewest libffi takes.
        k17(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16)
    );
    weighted_kernel!(
        /// 18 arguments: past the inline arrays too.
        k18(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17)
    );

    /// Every kernel above with its arity.
    fn kernels() -> [(*const (), usize); 19] {
        [
            (k0 as *const (), 0),
            (k1 as *const (), 1),
            (k2 as *const (), 2),
            (k3 as *const (), 3),
            (k4 as *const (), 4),
            (k5 as *const (), 5),
            (k6 as *const (), 6),
            (k7 as *const (), 7),
            (k8 as *const (), 8),
            (k9 as *const (), 9),
            (k10 as *const (), 10),
            (k11 as *const (), 11),
            (k12 as *const (), 12),
            (k13 as *const (), 13),
            (k14 as *const (), 14),
            (k15 as *const (), 15),
            (k16 as *const (), 16),
            (k17 as *const (), 17),
            (k18 as *const (), 18),
        ]
    }

    fn entry(f: *const ()) -> NonNull<c_void> {
        NonNull::new(f as *mut c_void).unwrap()
    }

    static REFUSED_CALLED: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn must_not_run(a: usize) {
        REFUSED_CALLED.store(a, Ordering::SeqCst);
    }

    /// A call interface libffi refuses (`ffi_prep_cif` fails: here a bad
    /// ABI, 0 being `FFI_FIRST_ABI` or below on every target) is an error
    /// naming libffi, and the kernel is not called.
    #[test]
    fn a_refused_call_interface_is_an_error_and_calls_nothing() {
        let args = [7usize as *mut c_void];
        // SAFETY: a real function taking one pointer-sized argument.
        let result = unsafe { call_with_abi(0, entry(must_not_run as *const ()), &args, None) };
        let err = result.expect_err("libffi accepted ABI 0");
        assert!(
            err.contains("libffi cannot prepare a call with 1 pointer arguments"),
            "{err}"
        );
        assert_eq!(REFUSED_CALLED.load(Ordering::SeqCst), 0);
    }

    /// What `typed` received.
    type Received = (f32, f64, i8, u16, i32, u64);
    static TYPED: std::sync::Mutex<Option<Received>> = std::sync::Mutex::new(None);

    extern "C" fn typed(a: f32, b: f64, c: i8, d: u16, e: i32, f: u64) {
        *TYPED.lock().unwrap() = Some((a, b, c, d, e, f));
    }

    /// Floats reach C `float`/`double` parameters (SSE registers), and
    /// narrow integers their parameters, from their pointer-sized slots.
    #[test]
    fn typed_arguments_reach_c_parameters_of_every_scalar_type() {
        let slots = [
            2.5f32.to_bits() as usize,
            (-0.125f64).to_bits() as usize,
            -3i8 as isize as usize,
            65535u16 as usize,
            -70000i32 as isize as usize,
            u64::MAX as usize,
        ];
        let args: Vec<*mut c_void> = slots.iter().map(|&v| v as *mut c_void).collect();
        use KernelArgType::*;
        let types = [F32, F64, I8, U16, I32, U64];
        // SAFETY: `typed` has exactly these parameter types.
        unsafe { call_with_typed_args(entry(typed as *const ()), &args, &types) }.unwrap();
        assert_eq!(
            *TYPED.lock().unwrap(),
            Some((2.5, -0.125, -3, 65535, -70000, u64::MAX))
        );
        // SAFETY: refused before any call.
        let err = unsafe { call_with_typed_args(entry(typed as *const ()), &args, &types[..2]) };
        assert!(err.is_err());
    }

    #[test]
    fn calls_with_every_arity_directly_and_through_libffi() {
        for (kernel, arity) in kernels() {
            SEEN.store(usize::MAX, Ordering::SeqCst);
            let args: Vec<*mut c_void> = (1..=arity).map(|v| v as *mut c_void).collect();
            // SAFETY: `kernel` takes `arity` pointer-sized arguments.
            unsafe { call_with_pointer_args(entry(kernel), &args) }.unwrap();
            let expected: usize = (1..=arity).map(|v| v * v).sum();
            assert_eq!(SEEN.load(Ordering::SeqCst), expected, "{arity} arguments");
        }
    }
}
