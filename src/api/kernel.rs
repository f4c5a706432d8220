//! Typed kernels ([`Kernel`]) and their launch configuration.
use super::params::{checked_values, ArgSlot, BoundedSignature, KernelSignature, LaunchArgs};
use crate::launch::RegionLaunch;
use crate::{Device, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

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
/// # use omptarget::{Device, Image, Kernel, Slice};
/// # fn f(device: &Device, bytes: &[u8]) -> omptarget::Result<()> {
/// let image = Image::load(device, bytes, &["k"])?;
/// // SAFETY: (the example does not compile, so it never runs)
/// let kernel: Kernel<(Slice<f32>,)> = unsafe { image.kernel("k")? };
/// drop(image); // error: `image` is borrowed by `kernel`
/// let _ = kernel.name();
/// # Ok(()) }
/// ```
///
/// Typed kernels: a [`Kernel`] is typed by the tuple of its C parameter
/// types (its signature), declared once when it is looked up; every launch
/// is then checked against it at compile time.
///
/// | C parameters | in the signature | passed at launch |
/// |---|---|---|
/// | `const T *p, size_t n` | [`crate::Slice<T>`] | `&DeviceBuffer<T>`: its address and length |
/// | `T *p, size_t n` | [`crate::SliceMut<T>`] | `&mut DeviceBuffer<T>` (on a [`crate::Queue`]: a [`crate::ScopedBuffer`]) |
/// | `float`, `double` | `f32`, `f64` | the value |
/// | `int8_t` ... `uint64_t`, `intptr_t`, `size_t` | `i8` ... `u64`, `isize`, `usize` | the value |
/// | `const T *` alone | [`crate::Ptr<T>`] | `&DeviceBuffer<T>`, with [`Kernel::launch_unchecked`] |
/// | `T *` alone | [`crate::PtrMut<T>`] | `&mut DeviceBuffer<T>`, with [`Kernel::launch_unchecked`] |
///
/// A signature of slices and scalars is a
/// [`crate::BoundedSignature`]: [`Kernel::launch`] is safe, because the
/// kernel gets each buffer's true length and `Image::kernel`'s caller
/// vouched that it stays below it. A bare pointer's reach depends on the
/// values of a launch, so only the `unsafe` [`Kernel::launch_unchecked`]
/// takes it; a safe launch of such a kernel, the one that could corrupt
/// the heap with a length larger than the buffers, does not compile:
///
/// ```compile_fail,E0277
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Ptr, PtrMut};
/// # fn f(k: Kernel<'_, (f32, Ptr<f32>, PtrMut<f32>, usize)>, x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>) {
/// // void saxpy(float a, const float *x, float *y, size_t n), 4 values each:
/// k.launch(LaunchConfig::default(), (2.0f32, x, y, 64usize)); // error: not bounded
/// # }
/// ```
///
/// ```compile_fail,E0277
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Slice, SliceMut};
/// # fn f(k: Kernel<'_, (Slice<f32>, SliceMut<f32>, usize)>, a: &DeviceBuffer<f32>) {
/// // One argument for a three-parameter kernel does not compile.
/// k.launch(LaunchConfig::default(), (a,));
/// # }
/// ```
///
/// ```compile_fail,E0277
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Slice, SliceMut};
/// # fn f(k: Kernel<'_, (Slice<f32>, SliceMut<f32>, usize)>, a: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>) {
/// // A `f64` for a `size_t` parameter does not compile.
/// k.launch(LaunchConfig::default(), (a, c, 2.0f64));
/// # }
/// ```
///
/// ```compile_fail,E0502
/// # use omptarget::{DeviceBuffer, Kernel, LaunchConfig, Slice, SliceMut};
/// # fn f(k: Kernel<'_, (Slice<f32>, SliceMut<f32>)>, mut a: DeviceBuffer<f32>) {
/// // The same buffer as input and output breaks Rust's aliasing rules.
/// k.launch(LaunchConfig::default(), (&a, &mut a));
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
            .field("parameters", &S::types())
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
    /// it to finish. `S` is a [`BoundedSignature`]: every buffer goes with
    /// its length ([`crate::Slice`], [`crate::SliceMut`]), so what the
    /// kernel reaches is bounded by the buffers it was given.
    ///
    /// # Errors
    /// A buffer on another device than the kernel's, or a buffer the
    /// kernel writes passed twice ([`Error::InvalidArgument`]); a plugin
    /// that cannot pass a scalar type ([`Error::Unsupported`]); the
    /// plugin's failure, with its reason ([`Error::PluginCallFailed`]).
    pub fn launch<A: LaunchArgs<S>>(&self, config: LaunchConfig, args: A) -> Result<()>
    where
        S: BoundedSignature,
    {
        // SAFETY: a bounded signature: the kernel reaches only the buffers
        // it is given, within their lengths (`Image::kernel`'s contract).
        unsafe { self.launch_unchecked(config, args) }
    }

    /// [`Kernel::launch`] for any signature, bare [`crate::Ptr`] and
    /// [`crate::PtrMut`] parameters included; the same checks are made.
    ///
    /// # Safety
    /// With these argument values, the kernel reads and writes only within
    /// the buffers passed (e.g. the length passed for a bare pointer is at
    /// most its buffer's length).
    pub unsafe fn launch_unchecked<A: LaunchArgs<S>>(
        &self,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        let mut values = self.checked_values(&args.slots())?;
        let types = S::types();
        // SAFETY: `addr` is a kernel of an image loaded on this device (the
        // image outlives this borrow) and `S` its C signature (the contract
        // of `Image::kernel`); the buffers are borrowed for the call and
        // within bounds (our contract).
        unsafe {
            self.device.run_typed_on(
                None,
                self.addr as *mut c_void,
                &mut values,
                types.as_slice(),
                config.region()?,
            )
        }
    }

    /// The argument values, after the checks every launch makes.
    pub(crate) fn checked_values(&self, slots: &[ArgSlot]) -> Result<Vec<*mut c_void>> {
        checked_values(self.name, self.device, slots)
    }
}
