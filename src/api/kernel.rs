//! Typed kernels ([`Kernel`]) and their launch configuration.
use super::params::{checked_values, ArgSlot, BoundedSignature, KernelSignature, LaunchArgs};
use crate::launch::RegionLaunch;
use crate::{Device, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

/// How to launch a kernel: as a teams region of `teams` teams of `threads`
/// threads each ([`LaunchConfig::teams`]), as a teams region with the
/// plugin's choice of both (the default, also `teams(0, 0)`), or as a
/// region without teams ([`LaunchConfig::single`]).
///
/// What teams and threads do depends on the kind of kernel and its device:
///
/// | kernel | device | `default()` | `teams(t, n)` | `single()` |
/// |---|---|---|---|---|
/// | plain C function (`cc -shared -fPIC`) | host | one call | one call if `t` and `n` are at most 1, else refused | one call |
/// | `-fopenmp` C function | host | one call; its own `parallel`/`teams` pragmas start libomp's threads (their clauses, `OMP_NUM_THREADS`) | as for a plain function | one call |
/// | CUDA kernel (a cubin without OpenMP's device runtime) | CUDA | a grid of 128 blocks of 128 threads (LLVM's defaults; `OMP_NUM_TEAMS`, `OMP_TEAMS_THREAD_LIMIT`) | a grid of `t` blocks of `n` threads, exactly, or refused | 1 block of 1 thread |
/// | OpenMP kernel (clang `-fopenmp-targets=nvptx64`) | CUDA | LLVM's choice | `t` teams of `n` threads (plus a warp for the main thread of a generic-mode kernel), or refused | one team |
///
/// The host plugin runs a kernel as one call of the function on the
/// calling thread: a plain C function has no team or thread number to
/// read, so calling it 100 times for `teams(100, 0)` would be wrong, and
/// calling it once would silently drop what was asked. So a launch of more
/// than one team or thread there is refused; parallelise inside the
/// kernel instead (an `-fopenmp` kernel with `#pragma omp parallel for`).
/// On the CUDA plugin the launch's teams are the grid and its threads the
/// block (`blockIdx`, `blockDim` and `threadIdx` in the kernel); where
/// LLVM's launch entries clamp what a region asks for to the device's and
/// the kernel's limits, a typed launch gets what it asked for or an error.
///
/// A launch is refused with [`Error::UnsupportedLaunch`], before the
/// plugin is called, when it asks for more teams or threads per team than
/// one launch runs on the device ([`crate::DeviceProperties::max_teams`],
/// `max_threads`; the host's are 1). A limit of one kernel only its plugin
/// knows (the threads a CUDA kernel's registers allow) comes back as the
/// plugin's refusal ([`Error::PluginCallFailed`], whose reason says the
/// limit). A plugin that does not report limits (LLVM's own plugins) gets
/// the numbers as LLVM's runtime would pass them, and does with them what
/// it does for clang's regions: LLVM 14's host plugin ignores them.
/// `teams` or `threads` above `i32::MAX` is [`Error::InvalidArgument`].
///
/// ```
/// # use omptarget::{Config, Error, LaunchConfig, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// let device = runtime.device(0)?; // the built-in host plugin
/// assert_eq!(device.properties()?.max_teams, Some(1));
/// // ... so `kernel.launch(LaunchConfig::teams(100, 0), ...)` is
/// // `Error::UnsupportedLaunch` there; `LaunchConfig::default()` runs it.
/// # Ok::<(), omptarget::Error>(())
/// ```
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
    /// A teams region of `teams` teams of `threads` threads each (0 for
    /// either lets the plugin choose); what each kind of kernel makes of
    /// them, and when they are refused: [`LaunchConfig`].
    pub fn teams(teams: u32, threads: u32) -> Self {
        LaunchConfig {
            launch: Launch::Teams { teams, threads },
        }
    }

    /// A region without teams (`#pragma omp target` alone): one team of
    /// one thread (on the CUDA plugin, a generic-mode OpenMP kernel also
    /// gets its main thread's warp).
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
/// // SAFETY: the example's kernel object: no initialiser or finaliser.
/// let image = unsafe { Image::load(device, bytes, &["k"]) }?;
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
    /// Its image's gate: launches exclude host accesses to the globals.
    pub(crate) gate: &'img super::gate::Gate,
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
    /// A read or write of one of its image's globals ([`crate::Global`])
    /// in progress on another thread ends before the kernel starts, and
    /// one asked for while it runs waits for it.
    ///
    /// # Errors
    /// A buffer on another device than the kernel's, or a buffer the
    /// kernel writes passed twice ([`Error::InvalidArgument`]); a plugin
    /// that cannot pass a scalar type ([`Error::Unsupported`]); more teams
    /// or threads than the device runs in one launch
    /// ([`Error::UnsupportedLaunch`], see [`LaunchConfig`]); the plugin's
    /// failure, with its reason ([`Error::PluginCallFailed`]).
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
        let region = config.region()?;
        // No host access to the image's globals while it runs.
        let _running = self.gate.launch();
        // SAFETY: `addr` is a kernel of an image loaded on this device (the
        // image outlives this borrow) and `S` its C signature (the contract
        // of `Image::kernel`); the buffers are borrowed for the call and
        // within bounds (our contract); the globals are not accessed by the
        // host meanwhile (the gate).
        unsafe {
            self.device.run_typed_on(
                None,
                self.addr as *mut c_void,
                &mut values,
                types.as_slice(),
                region,
            )
        }
    }

    /// The argument values, after the checks every launch makes.
    pub(crate) fn checked_values(&self, slots: &[ArgSlot]) -> Result<Vec<*mut c_void>> {
        checked_values(self.name, self.device, slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_configs_become_regions_and_overflow_is_refused() {
        assert_eq!(
            LaunchConfig::default().region().unwrap(),
            RegionLaunch::Teams {
                num_teams: 0,
                thread_limit: 0,
                loop_tripcount: 0
            }
        );
        assert_eq!(LaunchConfig::teams(0, 0), LaunchConfig::teams(0, 0));
        assert_eq!(
            LaunchConfig::teams(100, 256).region().unwrap(),
            RegionLaunch::Teams {
                num_teams: 100,
                thread_limit: 256,
                loop_tripcount: 0
            }
        );
        assert_eq!(
            LaunchConfig::single().region().unwrap(),
            RegionLaunch::Single
        );
        for config in [
            LaunchConfig::teams(u32::MAX, 1),
            LaunchConfig::teams(1, 1 << 31),
        ] {
            let err = config.region().unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
    }
}
