//! Typed kernels ([`Kernel`]), their signatures and launch configuration.
use super::DeviceBuffer;
use super::DeviceCopy;
use crate::abi::plugin::KernelArgType;
use crate::launch::RegionLaunch;
use crate::{Device, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

/// A `const T *` kernel parameter: the kernel reads the buffer.
pub struct Ptr<T: DeviceCopy>(PhantomData<fn() -> T>);

/// A `T *` kernel parameter: the kernel may write the buffer.
pub struct PtrMut<T: DeviceCopy>(PhantomData<fn() -> T>);

/// One C parameter type of a kernel signature.
///
/// Implemented for [`Ptr<T>`], [`PtrMut<T>`] and the C scalar types
/// (`f32`, `f64`, `i8` to `u64`, `isize`, `usize`).
pub trait KernelParam: sealed::Sealed {
    /// How the plugin passes it.
    #[doc(hidden)]
    const TYPE: KernelArgType;
}

/// A kernel's parameter list: a tuple of [`KernelParam`]s (up to 12).
pub trait KernelSignature: sealed::Sealed {
    /// The C type of each parameter, in order.
    #[doc(hidden)]
    const TYPES: &'static [KernelArgType];
}

/// A value passed for parameter type `P` in a blocking launch:
/// `&DeviceBuffer<T>` for [`Ptr<T>`], `&mut DeviceBuffer<T>` for
/// [`PtrMut<T>`], the value itself for a scalar.
pub trait KernelArg<P: KernelParam> {
    /// The pointer-sized slot, and the device of a buffer.
    #[doc(hidden)]
    fn slot(&self) -> (usize, Option<DeviceRef>);
}

/// A value passed for parameter type `P` in a launch on a
/// [`crate::Queue`]: `&DeviceBuffer<T>` or a [`crate::ScopedBuffer`] for
/// [`Ptr<T>`], a [`crate::ScopedBuffer`] (the buffer lent to the scope
/// exclusively) for [`PtrMut<T>`], the value itself for a scalar.
pub trait QueuedKernelArg<P: KernelParam> {
    /// The pointer-sized slot, and the device of a buffer.
    #[doc(hidden)]
    fn queued_slot(&self) -> (usize, Option<DeviceRef>);
}

/// The arguments of one launch of a kernel with signature `S`: a tuple
/// with one [`KernelArg`] per parameter.
pub trait LaunchArgs<S: KernelSignature> {
    /// Each argument's slot and buffer device, in order.
    #[doc(hidden)]
    fn slots(&self) -> Vec<(usize, Option<DeviceRef>)>;
}

/// [`LaunchArgs`] for a launch on a [`crate::Queue`].
pub trait QueuedLaunchArgs<S: KernelSignature> {
    /// Each argument's slot and buffer device, in order.
    #[doc(hidden)]
    fn queued_slots(&self) -> Vec<(usize, Option<DeviceRef>)>;
}

mod sealed {
    pub trait Sealed {}
}

impl<T: DeviceCopy> sealed::Sealed for Ptr<T> {}
impl<T: DeviceCopy> sealed::Sealed for PtrMut<T> {}
impl<T: DeviceCopy> KernelParam for Ptr<T> {
    const TYPE: KernelArgType = KernelArgType::Pointer;
}
impl<T: DeviceCopy> KernelParam for PtrMut<T> {
    const TYPE: KernelArgType = KernelArgType::Pointer;
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

impl<T: DeviceCopy> KernelArg<Ptr<T>> for &DeviceBuffer<'_, T> {
    fn slot(&self) -> (usize, Option<DeviceRef>) {
        (self.device_ptr().addr(), Some(DeviceRef::of(self.device())))
    }
}
impl<T: DeviceCopy> KernelArg<PtrMut<T>> for &mut DeviceBuffer<'_, T> {
    fn slot(&self) -> (usize, Option<DeviceRef>) {
        (self.device_ptr().addr(), Some(DeviceRef::of(self.device())))
    }
}
impl<T: DeviceCopy> QueuedKernelArg<Ptr<T>> for &DeviceBuffer<'_, T> {
    fn queued_slot(&self) -> (usize, Option<DeviceRef>) {
        (self.device_ptr().addr(), Some(DeviceRef::of(self.device())))
    }
}

macro_rules! scalar_params {
    ($($t:ty => $kind:ident, $slot:expr;)*) => { $(
        impl sealed::Sealed for $t {}
        impl KernelParam for $t {
            const TYPE: KernelArgType = KernelArgType::$kind;
        }
        impl KernelArg<$t> for $t {
            fn slot(&self) -> (usize, Option<DeviceRef>) {
                let to_slot: fn($t) -> usize = $slot;
                (to_slot(*self), None)
            }
        }
        impl QueuedKernelArg<$t> for $t {
            fn queued_slot(&self) -> (usize, Option<DeviceRef>) {
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
            const TYPES: &'static [KernelArgType] = &[$($p::TYPE),*];
        }
        impl<$($p: KernelParam, $a: KernelArg<$p>),*> LaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn slots(&self) -> Vec<(usize, Option<DeviceRef>)> {
                vec![$(self.$i.slot()),*]
            }
        }
        impl<$($p: KernelParam, $a: QueuedKernelArg<$p>),*> QueuedLaunchArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn queued_slots(&self) -> Vec<(usize, Option<DeviceRef>)> {
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

/// How to launch a kernel: as a teams region (the default, with the
/// plugin's choice of teams and threads), or as a region without teams
/// ([`LaunchConfig::single`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchConfig {
    launch: Launch,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Launch {
    /// Teams and threads per team; 0 lets the plugin choose.
    #[default]
    Default,
    Teams {
        teams: u32,
        threads: u32,
    },
    Single,
}

impl LaunchConfig {
    /// A teams region of `teams` teams of at most `threads` threads each
    /// (0 for either lets the plugin choose).
    pub fn teams(teams: u32, threads: u32) -> Self {
        LaunchConfig {
            launch: Launch::Teams { teams, threads },
        }
    }

    /// A region without teams (`#pragma omp target` alone): one thread.
    pub fn single() -> Self {
        LaunchConfig {
            launch: Launch::Single,
        }
    }

    pub(crate) fn region(self) -> Result<RegionLaunch> {
        let to_i32 = |v: u32, what: &str| {
            i32::try_from(v).map_err(|_| Error::InvalidArgument(format!("{what} {v} exceeds i32")))
        };
        Ok(match self.launch {
            Launch::Default => RegionLaunch::Teams {
                num_teams: 0,
                thread_limit: 0,
                loop_tripcount: 0,
            },
            Launch::Teams { teams, threads } => RegionLaunch::Teams {
                num_teams: to_i32(teams, "teams")?,
                thread_limit: to_i32(threads, "threads")?,
                loop_tripcount: 0,
            },
            Launch::Single => RegionLaunch::Single,
        })
    }
}

/// A kernel of a loaded [`crate::Image`], typed by its signature `S` (see
/// the table below for the parameter types). Borrows the image, so
/// it cannot outlive it:
///
/// ```compile_fail,E0505
/// # use omptarget::{Device, Image, Kernel, Ptr};
/// # fn f(device: &Device, bytes: &[u8]) -> omptarget::Result<()> {
/// let image = Image::load(device, bytes, &["k"])?;
/// // SAFETY: (the example does not compile, so it never runs)
/// let kernel: Kernel<(Ptr<f32>,)> = unsafe { image.kernel("k")? };
/// drop(image); // error: `image` is borrowed by `kernel`
/// let _ = kernel.name();
/// # Ok(()) }
/// ```
///
/// Typed kernels: a [`Kernel`] is typed by the tuple of its C parameter
/// types (its signature), declared once when it is looked up; every launch
/// is then checked against it at compile time.
///
/// | C parameter | in the signature | passed at launch |
/// |---|---|---|
/// | `const T *` | [`Ptr<T>`] | `&DeviceBuffer<T>` |
/// | `T *` | [`PtrMut<T>`] | `&mut DeviceBuffer<T>` (on a [`crate::Queue`]: a [`crate::ScopedBuffer`]) |
/// | `float`, `double` | `f32`, `f64` | the value |
/// | `int8_t` ... `uint64_t`, `intptr_t`, `size_t` | `i8` ... `u64`, `isize`, `usize` | the value |
///
/// ```compile_fail,E0277
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Ptr, PtrMut};
/// # fn f(k: Kernel<'_, (Ptr<f32>, PtrMut<f32>, usize)>, a: &DeviceBuffer<f32>) {
/// // One argument for a three-parameter kernel does not compile.
/// k.launch(LaunchConfig::default(), (a,));
/// # }
/// ```
///
/// ```compile_fail,E0277
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Ptr, PtrMut};
/// # fn f(k: Kernel<'_, (Ptr<f32>, PtrMut<f32>, usize)>, a: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>) {
/// // A `f64` for a `size_t` parameter does not compile.
/// k.launch(LaunchConfig::default(), (a, c, 2.0f64));
/// # }
/// ```
///
/// ```compile_fail,E0502
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Ptr, PtrMut};
/// # fn f(k: Kernel<'_, (Ptr<f32>, PtrMut<f32>, usize)>, mut a: DeviceBuffer<f32>) {
/// // The same buffer as input and output breaks Rust's aliasing rules.
/// k.launch(LaunchConfig::default(), (&a, &mut a, 16usize));
/// # }
/// ```
pub struct Kernel<'img, S: KernelSignature> {
    pub(crate) device: &'img Device,
    pub(crate) name: &'img str,
    pub(crate) addr: usize,
    pub(crate) _signature: PhantomData<fn(S)>,
}

impl<S: KernelSignature> Clone for Kernel<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: KernelSignature> Copy for Kernel<'_, S> {}

impl<S: KernelSignature> std::fmt::Debug for Kernel<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("device", &self.device.id())
            .field("parameters", &S::TYPES)
            .finish()
    }
}

impl<'img, S: KernelSignature> Kernel<'img, S> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The device it runs on.
    pub fn device(&self) -> &'img Device {
        self.device
    }

    /// Run the kernel with `args` (one per parameter of `S`) and wait for
    /// it to finish.
    ///
    /// # Errors
    /// A buffer on another device than the kernel's ([`Error::InvalidArgument`]);
    /// a plugin that cannot pass a scalar type ([`Error::Unsupported`]);
    /// the plugin's failure, with its reason ([`Error::PluginCallFailed`]).
    pub fn launch<A: LaunchArgs<S>>(&self, config: LaunchConfig, args: A) -> Result<()> {
        let mut values = self.checked_values(args.slots())?;
        // SAFETY: `addr` is a kernel of an image loaded on this device (the
        // image outlives this borrow) and `S` its C signature (the contract
        // of `Image::kernel`); the buffers are borrowed for the call.
        unsafe {
            self.device.run_typed_on(
                None,
                self.addr as *mut c_void,
                &mut values,
                S::TYPES,
                config.region()?,
            )
        }
    }

    /// The argument values, after checking each buffer's device.
    pub(crate) fn checked_values(
        &self,
        slots: Vec<(usize, Option<DeviceRef>)>,
    ) -> Result<Vec<*mut c_void>> {
        for (i, (_, device)) in slots.iter().enumerate() {
            if let Some(device) = device {
                if !device.is(self.device) {
                    return Err(Error::InvalidArgument(format!(
                        "argument {i} of kernel {} is a buffer on device {}{}; the kernel runs on device {}",
                        self.name,
                        device.id,
                        if device.id == self.device.id() { " of another runtime" } else { "" },
                        self.device.id()
                    )));
                }
            }
        }
        Ok(slots.into_iter().map(|(v, _)| v as *mut c_void).collect())
    }
}
