//! Kernel parameter types ([`Ptr`], [`PtrMut`], [`Slice`], [`SliceMut`],
//! the C scalars), signatures, and what a launch passes for each.
//!
//! # Why a slice parameter carries its length
//!
//! A kernel's object code cannot be checked, so [`crate::Image::kernel`]
//! is `unsafe`: its caller vouches, once, for what the kernel does with
//! its arguments. That can only cover what holds whatever values a later
//! launch passes: "the kernel touches `x[0..n)`" where `n` is the length
//! the API passes with `x` is such a property; "the kernel touches
//! `x[0..n)`" where `n` is any `usize` the caller of `launch` picks is not
//! (a safe launch passing `64usize` with 4-element buffers would corrupt
//! the heap). So:
//!
//! * [`Slice<T>`] and [`SliceMut<T>`] are two C parameters, `const T *`
//!   (`T *`) and `size_t`, both filled from one buffer: the pointer and its
//!   length in values. A signature of slices and scalars only is a
//!   [`BoundedSignature`]: its kernels launch safely
//!   ([`crate::Kernel::launch`]).
//! * [`Ptr<T>`] and [`PtrMut<T>`] are one bare pointer. How far the kernel
//!   reaches depends on the other arguments, so a signature with one is
//!   launched with the `unsafe` [`crate::Kernel::launch_unchecked`], whose
//!   caller vouches for that launch.
//!
//! (cudarc makes every launch `unsafe`; bounded signatures keep the
//! compile-time checks of this crate and make them sufficient.)
use super::view::{DeviceSlice, DeviceSliceMut};
use super::DeviceBuffer;
use super::DeviceCopy;
use crate::abi::plugin::KernelArgType;
use crate::{Device, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

/// A `const T *` kernel parameter without a length: the kernel reads the
/// buffer, as far as its other arguments say (launch it with
/// [`crate::Kernel::launch_unchecked`]).
pub struct Ptr<T: DeviceCopy>(PhantomData<fn() -> T>);

/// A `T *` kernel parameter without a length: the kernel may write the
/// buffer, as far as its other arguments say (launch it with
/// [`crate::Kernel::launch_unchecked`]).
pub struct PtrMut<T: DeviceCopy>(PhantomData<fn() -> T>);

/// Two kernel parameters, `const T *p, size_t n`, filled from one buffer:
/// its address and its length in values. The kernel reads `p[0..n)`.
pub struct Slice<T: DeviceCopy>(PhantomData<fn() -> T>);

/// Two kernel parameters, `T *p, size_t n`, filled from one buffer: its
/// address and its length in values. The kernel may read and write
/// `p[0..n)`.
pub struct SliceMut<T: DeviceCopy>(PhantomData<fn() -> T>);

/// One parameter of a kernel signature: one C parameter, or two for a
/// slice.
///
/// Implemented for [`Ptr<T>`], [`PtrMut<T>`], [`Slice<T>`],
/// [`SliceMut<T>`] and the C scalar types (`f32`, `f64`, `i8` to `u64`,
/// `isize`, `usize`).
pub trait KernelParam: sealed::Sealed {
    /// How the plugin passes each C parameter it stands for.
    #[doc(hidden)]
    const TYPES: &'static [KernelArgType];
}

/// A parameter whose memory the kernel reaches only through lengths the
/// API fills in: a scalar, a [`Slice`] or a [`SliceMut`] (not a bare
/// [`Ptr`] or [`PtrMut`]).
pub trait BoundedParam: KernelParam {}

/// A kernel's parameter list: a tuple of [`KernelParam`]s (up to 12).
pub trait KernelSignature: sealed::Sealed {
    /// The C type of each C parameter, in order (a slice is two).
    #[doc(hidden)]
    fn types() -> CTypes;
}

/// Most C parameters a signature has: 12 parameters, each at most two.
const MAX_C_PARAMS: usize = 24;

/// The C parameter types of a signature, on the stack (a launch allocates
/// nothing for them).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct CTypes {
    types: [KernelArgType; MAX_C_PARAMS],
    len: usize,
}

impl CTypes {
    fn new() -> Self {
        CTypes {
            types: [KernelArgType::Pointer; MAX_C_PARAMS],
            len: 0,
        }
    }

    fn push(&mut self, types: &[KernelArgType]) {
        self.types[self.len..self.len + types.len()].copy_from_slice(types);
        self.len += types.len();
    }

    /// The types, in order.
    pub fn as_slice(&self) -> &[KernelArgType] {
        &self.types[..self.len]
    }
}

impl std::fmt::Debug for CTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// A signature of [`BoundedParam`]s only: its kernels launch safely.
#[diagnostic::on_unimplemented(
    message = "kernel signature `{Self}` has a bare `Ptr`/`PtrMut` parameter: the API cannot bound what the kernel reaches through it",
    label = "this launch needs a signature of slices and scalars",
    note = "declare the buffer as `Slice<T>`/`SliceMut<T>` (the kernel gets its pointer and length), or launch with `unsafe {{ kernel.launch_unchecked(..) }}` and vouch for the lengths"
)]
pub trait BoundedSignature: KernelSignature {}

/// What a launch passes for one parameter: its C argument values, and the
/// buffer behind them (for the checks every launch makes).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ArgSlot {
    values: [usize; 2],
    width: usize,
    buffer: Option<BufferArg>,
}

/// A buffer argument: where it is and whether the kernel may write it.
#[derive(Debug, Clone, Copy)]
struct BufferArg {
    device: DeviceRef,
    addr: usize,
    bytes: usize,
    writes: bool,
}

impl ArgSlot {
    fn scalar(value: usize) -> Self {
        ArgSlot {
            values: [value, 0],
            width: 1,
            buffer: None,
        }
    }

    /// A buffer of `len` values of `T` at `addr` on `device`, as a bare
    /// pointer (`slice`: false) or a pointer and its length.
    pub(crate) fn buffer<T>(
        device: &Device,
        addr: usize,
        len: usize,
        writes: bool,
        slice: bool,
    ) -> Self {
        ArgSlot {
            values: [addr, len],
            width: if slice { 2 } else { 1 },
            buffer: Some(BufferArg {
                device: DeviceRef::of(device),
                addr,
                bytes: len * std::mem::size_of::<T>(),
                writes,
            }),
        }
    }
}

/// A value passed for parameter type `P` in a blocking launch:
/// `&DeviceBuffer<T>` or a [`crate::DeviceSlice`] for [`Ptr<T>`] and
/// [`Slice<T>`], `&mut DeviceBuffer<T>` or a [`crate::DeviceSliceMut`]
/// for [`PtrMut<T>`] and [`SliceMut<T>`], the value itself for a scalar.
pub trait KernelArg<P: KernelParam> {
    /// The C argument values, and the buffer behind them.
    #[doc(hidden)]
    fn slot(&self) -> ArgSlot;
}

/// A value passed for parameter type `P` in a launch on a
/// [`crate::ScopedQueue`]: `&DeviceBuffer<T>`, a [`crate::DeviceSlice`] or
/// a [`crate::ScopedBuffer`] for [`Ptr<T>`] and [`Slice<T>`]; a
/// [`crate::ScopedBuffer`], a `&mut DeviceBuffer<T>` or a
/// [`crate::DeviceSliceMut`] (borrowed for the rest of the scope) for
/// [`PtrMut<T>`] and [`SliceMut<T>`]; the value itself for a scalar.
pub trait QueuedKernelArg<P: KernelParam> {
    /// The C argument values, and the buffer behind them.
    #[doc(hidden)]
    fn queued_slot(&self) -> ArgSlot;
}

/// The arguments of one launch of a kernel with signature `S`: a tuple
/// with one [`KernelArg`] per parameter.
pub trait LaunchArgs<S: KernelSignature> {
    /// Each parameter's slot, in order.
    #[doc(hidden)]
    fn slots(&self) -> Vec<ArgSlot>;
}

/// [`LaunchArgs`] for a launch on a [`crate::ScopedQueue`].
pub trait QueuedLaunchArgs<S: KernelSignature> {
    /// Each parameter's slot, in order.
    #[doc(hidden)]
    fn queued_slots(&self) -> Vec<ArgSlot>;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! buffer_params {
    ($($param:ident: $types:expr, bounded $bounded:tt;)*) => { $(
        impl<T: DeviceCopy> sealed::Sealed for $param<T> {}
        impl<T: DeviceCopy> KernelParam for $param<T> {
            const TYPES: &'static [KernelArgType] = $types;
        }
        buffer_params!(@bounded $bounded $param);
    )* };
    (@bounded true $param:ident) => { impl<T: DeviceCopy> BoundedParam for $param<T> {} };
    (@bounded false $param:ident) => {};
}
buffer_params! {
    Ptr: &[KernelArgType::Pointer], bounded false;
    PtrMut: &[KernelArgType::Pointer], bounded false;
    Slice: &[KernelArgType::Pointer, KernelArgType::Pointer], bounded true;
    SliceMut: &[KernelArgType::Pointer, KernelArgType::Pointer], bounded true;
}

/// Which device a buffer argument lives on: its address (identity: two
/// runtimes both have a device 0) and its number (for messages).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceRef {
    addr: usize,
    id: usize,
}

impl DeviceRef {
    pub(crate) fn of(device: &Device) -> Self {
        DeviceRef {
            addr: device as *const Device as usize,
            id: device.id(),
        }
    }

    pub(crate) fn is(&self, device: &Device) -> bool {
        self.addr == device as *const Device as usize
    }
}

/// `&DeviceBuffer` for a reading parameter, `&mut DeviceBuffer` for a
/// writing one; `&DeviceBuffer` also for reading parameters of queued
/// launches (nobody can write it while the scope holds the borrow).
macro_rules! buffer_args {
    ($($param:ident, $slice:expr => $($arg:ty: $writes:expr),*;)*) => { $( $(
        impl<T: DeviceCopy> KernelArg<$param<T>> for $arg {
            fn slot(&self) -> ArgSlot {
                ArgSlot::buffer::<T>(self.device(), self.device_ptr().addr(), self.len(), $writes, $slice)
            }
        }
    )* )* };
}
buffer_args! {
    Ptr, false => &DeviceBuffer<'_, T>: false, DeviceSlice<'_, T>: false;
    Slice, true => &DeviceBuffer<'_, T>: false, DeviceSlice<'_, T>: false;
    PtrMut, false => &mut DeviceBuffer<'_, T>: true, DeviceSliceMut<'_, T>: true;
    SliceMut, true => &mut DeviceBuffer<'_, T>: true, DeviceSliceMut<'_, T>: true;
}
impl<T: DeviceCopy> QueuedKernelArg<Ptr<T>> for &DeviceBuffer<'_, T> {
    fn queued_slot(&self) -> ArgSlot {
        KernelArg::<Ptr<T>>::slot(self)
    }
}
impl<T: DeviceCopy> QueuedKernelArg<Slice<T>> for &DeviceBuffer<'_, T> {
    fn queued_slot(&self) -> ArgSlot {
        KernelArg::<Slice<T>>::slot(self)
    }
}

macro_rules! scalar_params {
    ($($t:ty => $kind:ident, $slot:expr;)*) => { $(
        impl sealed::Sealed for $t {}
        impl KernelParam for $t {
            const TYPES: &'static [KernelArgType] = &[KernelArgType::$kind];
        }
        impl BoundedParam for $t {}
        impl KernelArg<$t> for $t {
            fn slot(&self) -> ArgSlot {
                let to_slot: fn($t) -> usize = $slot;
                ArgSlot::scalar(to_slot(*self))
            }
        }
        impl QueuedKernelArg<$t> for $t {
            fn queued_slot(&self) -> ArgSlot {
                KernelArg::<$t>::slot(self)
            }
        }
    )* };
}
// Integers sign- or zero-extended to the slot (what the x86_64 and CUDA
// ABIs expect of a caller); floats as their bit pattern in the low bytes.
scalar_params! {
    i8 => I8, |v| v as isize as usize;
    u8 => U8, |v| v as usize;
    i16 => I16, |v| v as isize as usize;
    u16 => U16, |v| v as usize;
    i32 => I32, |v| v as isize as usize;
    u32 => U32, |v| v as usize;
    i64 => I64, |v| v as isize as usize;
    u64 => U64, |v| v as usize;
    isize => Pointer, |v| v as usize;
    usize => Pointer, |v| v;
    f32 => F32, |v| v.to_bits() as usize;
    f64 => F64, |v| v.to_bits() as usize;
}

macro_rules! signatures {
    ($(($($p:ident $a:ident $i:tt),*);)*) => { $(
        impl<$($p: KernelParam),*> sealed::Sealed for ($($p,)*) {}
        impl<$($p: KernelParam),*> KernelSignature for ($($p,)*) {
            #[allow(unused_mut)]
            fn types() -> CTypes {
                let mut types = CTypes::new();
                $(types.push($p::TYPES);)*
                types
            }
        }
        impl<$($p: BoundedParam),*> BoundedSignature for ($($p,)*) {}
        impl<$($p: KernelParam, $a: KernelArg<$p>),*> LaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn slots(&self) -> Vec<ArgSlot> {
                vec![$(self.$i.slot()),*]
            }
        }
        impl<$($p: KernelParam, $a: QueuedKernelArg<$p>),*> QueuedLaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn queued_slots(&self) -> Vec<ArgSlot> {
                vec![$(self.$i.queued_slot()),*]
            }
        }
    )* };
}
signatures! {
    ();
    (P0 A0 0);
    (P0 A0 0, P1 A1 1);
    (P0 A0 0, P1 A1 1, P2 A2 2);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10);
    (P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11);
}

/// The C argument values of one launch of `kernel` on `device`, after the
/// checks every launch makes, blocking or queued: each buffer is on the
/// kernel's device (of the same runtime), and no buffer the kernel may
/// write overlaps another buffer argument (Rust's aliasing rules, which a
/// `Copy` [`crate::ScopedBuffer`] passed twice would otherwise break).
pub(crate) fn checked_values(
    kernel: &str,
    device: &Device,
    slots: &[ArgSlot],
) -> Result<Vec<*mut c_void>> {
    for (i, slot) in slots.iter().enumerate() {
        let Some(buffer) = slot.buffer else { continue };
        if !buffer.device.is(device) {
            return Err(Error::InvalidArgument(format!(
                "argument {i} of kernel {kernel} is a buffer on device {}{}; the kernel runs on device {}",
                buffer.device.id,
                if buffer.device.id == device.id() { " of another runtime" } else { "" },
                device.id()
            )));
        }
        for (j, other) in slots.iter().enumerate().skip(i + 1) {
            let Some(other) = other.buffer else { continue };
            // An empty view touches nothing, wherever it points.
            let overlap = buffer.bytes > 0
                && other.bytes > 0
                && buffer.addr < other.addr + other.bytes
                && other.addr < buffer.addr + buffer.bytes;
            if overlap && (buffer.writes || other.writes) {
                return Err(Error::InvalidArgument(format!(
                    "arguments {i} and {j} of kernel {kernel} overlap and the kernel may write {}: \
                     a buffer it writes must not be passed again",
                    if buffer.writes { i } else { j }
                )));
            }
        }
    }
    Ok(slots
        .iter()
        .flat_map(|s| s.values[..s.width].iter().map(|&v| v as *mut c_void))
        .collect())
}
