//! omptarget: an OpenMP offload runtime whose whole lifecycle is explicit.
//!
//! A [`Runtime`] owns its plugins, devices, loaded images and memory: built
//! by [`Runtime::new`], torn down by [`Runtime::shutdown`] in one fixed
//! order, which returns a [`ShutdownReport`] of what it freed, what the
//! program never freed and what could not be freed. Handles borrow the
//! runtime, so none outlives the shutdown. The same runtime serves clang's
//! OpenMP programs through `libomptarget.so` (the `omptarget-shim` crate).
//!
//! # A walk through the API
//!
//! **1. A runtime.** [`Config::default`] gives the built-in host plugin's
//! devices: x86_64 code run in-process, 4 devices, nothing to stage. GPU
//! plugins (`libomptarget.rtl.cuda.so`) found next to the program join them.
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! use omptarget::{Config, Runtime};
//!
//! let runtime = Runtime::new(Config::default())?;
//! let device = runtime.device(0)?;
//! println!("device 0: {}", device.plugin_name());
//! # Ok(()) }
//! ```
//!
//! **2. Buffers, views and copies.** A [`DeviceBuffer`] owns `len`
//! values on one device (`len` may be 0). A view ([`DeviceSlice`],
//! [`DeviceSliceMut`]) is part of one, with the borrow rules of slices;
//! copies and launches take views wherever they take buffers, so a part
//! is a view, never an offset argument.
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! # use omptarget::{Config, DeviceBuffer, Runtime};
//! # let runtime = Runtime::new(Config::default())?;
//! # let device = runtime.device(0)?;
//! let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0, 3.0, 4.0])?;
//! let mut y = DeviceBuffer::<f32>::new(device, 4)?;
//! y.fill(0.0)?;
//! y.slice_mut(3..)?.copy_from_host(&[9.0])?;
//! assert_eq!(y.to_vec()?, [0.0, 0.0, 0.0, 9.0]);
//! let (mut low, _high) = y.split_at_mut(2)?;
//! low.copy_from(x.slice(2..)?)?;
//! assert_eq!(y.to_vec()?, [3.0, 4.0, 0.0, 9.0]);
//! # Ok(()) }
//! ```
//!
//! **3. Kernels.** An [`Image`] is a device object loaded on one device
//! (for the host plugin, a shared object: `cc -shared -fPIC`). Loading it
//! runs its initialisers and unloading it (dropping the [`Image`]) its
//! finalisers, so [`Image::load_file`] is `unsafe`: the caller vouches for
//! that code, as for any `dlopen` ([`Image::load`]'s `# Safety`). A
//! [`Kernel`] is typed by its C parameters, declared once, in an `unsafe`
//! lookup (the object code cannot be checked); every launch is then
//! checked at compile time: the number of arguments, their types, and
//! Rust's aliasing rules for the buffers. A [`Slice`] (`const T *, size_t`)
//! or [`SliceMut`] (`T *, size_t`) parameter gets a buffer's address and
//! its length, so a kernel that stays below the lengths it is given (what
//! the lookup vouches for) cannot reach past its buffers: [`Kernel::launch`]
//! is safe. A bare [`Ptr`]/[`PtrMut`] parameter's reach depends on the
//! other arguments, so such kernels launch with the `unsafe`
//! [`Kernel::launch_unchecked`]. Globals have typed handles ([`Global`]),
//! whose reads and writes never race a launch of their image's kernels;
//! a `const` global can be read but not written ([`Error::ReadOnlyGlobal`]).
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! # use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime, Slice, SliceMut};
//! # let runtime = Runtime::new(Config::default())?;
//! # let device = runtime.device(0)?;
//! # let x = DeviceBuffer::from_slice(device, &[1.0f32, 2.0, 3.0, 4.0])?;
//! # let mut y = DeviceBuffer::<f32>::new(device, 4)?;
//! // The kernel, built for the host plugin (`tests/kernels/typed.c`):
//! //   void scale(float a, const float *x, size_t nx, float *y, size_t ny) {
//! //     for (size_t i = 0; i < nx && i < ny; ++i) y[i] = a * x[i];
//! //   }
//! let dir = tempfile::tempdir()?;
//! let so = dir.path().join("typed.so");
//! let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/typed.c");
//! let built = std::process::Command::new("cc")
//!     .args(["-shared", "-fPIC", "-O2"]).arg(&source).arg("-o").arg(&so).status()?;
//! assert!(built.success());
//!
//! // SAFETY: the example's kernel object: no initialiser or finaliser.
//! let image = unsafe { Image::load_file(device, &so, &["scale", "counter"]) }?;
//! // SAFETY: that is its C signature, and it stays below the lengths it is given.
//! let scale: Kernel<(f32, Slice<f32>, SliceMut<f32>)> = unsafe { image.kernel("scale")? };
//! scale.launch(LaunchConfig::default(), (2.0f32, &x, &mut y))?;
//! assert_eq!(y.to_vec()?, [2.0, 4.0, 6.0, 8.0]);
//! assert_eq!(image.global::<i32>("counter")?.read()?, 41);
//! # Ok(()) }
//! ```
//!
//! **4. Queues.** A [`Queue`] (a plugin queue: a CUDA stream on a GPU)
//! runs copies and launches asynchronously, in order; [`Event`]s order
//! queues against each other and time them. A queue is `Send` and lives as
//! long as the program wants (`device.queue()?`, kept in a struct); work
//! that borrows memory is queued on it inside [`scope`], which waits for it
//! before returning, so nothing it borrows can be touched or freed early.
//! Copies name the device side first: `copy_from_host(dst, src)`,
//! `copy_to_host(src, dst)`, `copy_from(dst, src)`. A buffer written by
//! several operations is lent to the scope ([`Scope::bind`]).
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! # use omptarget::{Config, DeviceBuffer, Runtime};
//! # let runtime = Runtime::new(Config::default())?;
//! # let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
//! let input = vec![7u64; 1000];
//! let mut output = vec![0u64; 1000];
//! let mut a = DeviceBuffer::<u64>::new(d0, 1000)?;
//! let mut b = DeviceBuffer::<u64>::new(d1, 1000)?;
//! let (mut q0, mut q1) = (d0.queue()?, d1.queue()?);
//! omptarget::scope(|s| {
//!     let (q0, q1) = (s.attach(&mut q0), s.attach(&mut q1));
//!     let (a, b) = (s.bind(&mut a), s.bind(&mut b));
//!     q0.copy_from_host(a, &input)?;
//!     q0.copy_from(b, a)?;
//!     q1.wait_for(&q0.record_event()?)?;
//!     q1.copy_to_host(b, &mut output)?;
//!     Ok(())
//! })?;
//! assert_eq!(output, input);
//! # Ok(()) }
//! ```
//!
//! **5. What a device is, pinned memory, launch sizes.**
//! [`Device::properties`] says what the plugin knows of a device (name,
//! [`DeviceKind`], total and free memory, the teams and threads one launch
//! runs; `None` for what it does not know). A [`PinnedBuffer`] is host
//! memory the device's plugin allocates (page-locked `cuMemAllocHost` on
//! CUDA, ordinary memory on the host plugin), a slice on the host and the
//! host side of any copy. A [`LaunchConfig`] means one call on the host
//! plugin (more teams or threads are refused: [`Error::UnsupportedLaunch`])
//! and a grid of blocks on CUDA; its docs have the table.
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! # use omptarget::{Config, DeviceBuffer, PinnedBuffer, Runtime};
//! # let runtime = Runtime::new(Config::default())?;
//! let device = runtime.device(0)?;
//! let properties = device.properties()?;
//! println!("{properties}"); // e.g. "Intel(R) Xeon(R) ... (host CPU), 15.6 GiB, ..."
//! let mut staging = PinnedBuffer::<f32>::from_slice(device, &[1.0, 2.0])?;
//! let buffer = DeviceBuffer::from_slice(device, &staging)?;
//! buffer.copy_to_host(&mut staging)?;
//! # Ok(()) }
//! ```
//!
//! **6. Shutdown and report.** Dropping a handle frees or unloads it;
//! [`Runtime::shutdown`] then drains the memory managers, frees what the
//! program leaked (and lists it), unloads images, and deinitialises the
//! devices and plugins. A runtime dropped without `shutdown` does the same
//! and prints a one-line warning.
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! # use omptarget::{Config, DeviceBuffer, Runtime};
//! let runtime = Runtime::new(Config::default())?;
//! std::mem::forget(DeviceBuffer::<u8>::new(runtime.device(0)?, 64)?); // a leak
//! let report = runtime.shutdown();
//! assert_eq!(report.user_leaks.len(), 1);
//! assert_eq!(report.user_leaks[0].size, 64);
//! println!("{report}");
//! # Ok(()) }
//! ```
//!
//! More in `examples/`: `vec_add`, `multi_device_threads`,
//! `async_pipeline`, `queue_pipeline` (a long-lived queue in a struct,
//! views, event timing), `leak_report`.
//!
//! # How many runtimes
//!
//! A [`Runtime`] is `Sync`: threads share one (`std::thread::scope`, or an
//! `Arc`), and that is the way to use many threads. Separate runtimes each
//! need their own plugin state: the built-in host plugin has
//! [`BUILTIN_HOST_INSTANCES`] (16), so at most 16 runtimes of one process
//! use it at the same time; the next [`Runtime::new`] fails with
//! [`Error::NoPluginLoaded`] (reason [`SkipReason::AllInstancesInUse`])
//! until one is shut down. A plugin library (`libomptarget.rtl.*.so`)
//! has one state per process: one runtime at a time claims it.
//!
//! # The raw device layer
//!
//! Below the typed API, `Device` has raw operations (`alloc`, `free`,
//! `submit`, `load_image`, `run_region` ...): the plugin's entries behind
//! the device's checks, `unsafe` where the caller vouches for the memory
//! or for a plugin queue (`synchronize_queue`, `retrieve_on`).
//! They, the `mapping` tables and the per-plugin queries are what the
//! OpenMP layer (`omptarget-openmp`, LLVM's OpenMP semantics for the C
//! ABI) is built on; a Rust program needs none of them, so they are hidden
//! from these docs but reachable, like cudarc's `sys` layer. That
//! interface, deliberately small, is described in the repository's
//! `docs/openmp.md`; the design as a whole, in `DESIGN.md`.
//!
//! # Module map
//!
//! * `runtime`: the [`Runtime`] value, its plugins and devices, and the
//!   ordered teardown.
//! * [`config`]: [`Config`], explicit or from the environment.
//! * [`plugin`]: plugin libraries: `discovery` (where the default ones
//!   are), `loader` (dlopen, entries, claim, init), `entry_table` (the
//!   `__tgt_rtl_*` pointers, resolved once), `claim` (one runtime per
//!   library), `liveness` (the destruction callback's flags), `builtin`
//!   (the built-in host plugin).
//! * [`device`]: one device, initialised lazily; its `allocator` (the
//!   memory manager's view of the plugin), `images`, `properties` (what
//!   the plugin reports, the launch limits), `queue_ops` (plugin queues
//!   and events), `table` (the runtime's devices) and `teardown` (steps 1
//!   to 4 of the teardown).
//! * `memory`: the caching memory manager and table of live allocations
//!   (`live_table`: one shard's records; unit tests in `memory::tests`).
//! * `mapping` (hidden): the devices' host-to-device mapping tables, for
//!   the OpenMP layer.
//! * `image` (hidden): device images the runtime builds from parts.
//! * `launch`: running a target region ([`RegionLaunch`]).
//! * `api`: the typed Rust API ([`DeviceBuffer`], [`PinnedBuffer`],
//!   [`Image`], [`Kernel`], [`scope`] and its queues and events).
//! * `shutdown_report`: [`ShutdownReport`], what the teardown did;
//!   `step_outcome`: how one step went ([`StepOutcome`]).
//! * `leak_report`: the leak report built from a shutdown report;
//!   [`origin`]: where each allocation was made, for it.
//! * `trace`: debug output through `tracing` (`stderr`, the runtime's own
//!   subscriber) and the Chrome trace profile ([`profile`]).
//! * `error`: [`Error`] and [`Result`]; `sync`: the crate's lock helper.

#![deny(missing_docs)]

mod api;
pub mod config;
pub mod device;
mod error;
/// Device images built from parts, for the raw device layer's users (the
/// OpenMP layer's tests); the typed API's [`Image`] is what programs use.
#[doc(hidden)]
pub mod image;
mod image_dtors;
mod launch;
pub mod leak_report;
// LLVM 14's host-to-device mapping tables: the OpenMP layer's interface
// (`omptarget-openmp`), not part of the API for programs, so hidden from
// these docs (its source documents every item; docs/mapping.md describes it).
#[doc(hidden)]
pub mod mapping;
/// The caching memory manager. Public only with the `internals` feature,
/// for the benchmarks in `benches/`; users see it through [`Device`].
#[cfg(feature = "internals")]
pub mod memory;
#[cfg(not(feature = "internals"))]
mod memory;
pub mod origin;
pub mod plugin;
mod runtime;
pub mod shutdown_report;
mod step_outcome;
mod sync;
pub(crate) mod trace;

pub use api::{
    scope, BoundedParam, BoundedSignature, DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut,
    Event, Global, HostBuffer, Image, Kernel, KernelArg, KernelParam, KernelSignature, LaunchArgs,
    LaunchConfig, PinnedBuffer, Ptr, PtrMut, Queue, QueueDest, QueueSource, QueuedKernelArg,
    QueuedLaunchArgs, Returned, Scope, ScopedBuffer, ScopedQueue, Slice, SliceMut, Transfer,
};
pub use config::Config;
pub use device::{Device, DeviceKind, DeviceProperties, DevicePtr};
// The raw layer's types: the OpenMP layer's interface (docs/openmp.md),
// hidden from these docs, as the raw `Device` methods that use them.
#[doc(hidden)]
pub use device::LoadedImage;
pub use error::{Error, Result};
#[doc(hidden)]
pub use launch::RegionLaunch;
pub use plugin::{PluginInfo, SkipReason, SkippedPlugin};
pub use runtime::Runtime;
pub use shutdown_report::{
    ApiLeak, DtorKernels, DtorsOutcome, ImageDtors, LeakedImage, LeakedQueue, Phase,
    ShutdownReport, StepOutcome, TeardownStep,
};
// The profile's spans, for the OpenMP layer; programs turn the profile on
// with `Config` or `LIBOMPTARGET_PROFILE`, not through this module.
#[doc(hidden)]
pub use trace::profile;

/// How many [`Runtime`]s of one process can use the built-in host plugin at
/// the same time (each has its own instance, with its own devices and
/// lifecycle); 0 without feature `builtin-host`.
pub const BUILTIN_HOST_INSTANCES: usize = plugin::builtin::HOST_INSTANCES;

pub use omptarget_abi as abi;
