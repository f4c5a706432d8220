//! omptarget: an OpenMP offload runtime whose whole lifecycle is explicit.
//!
//! A [`Runtime`] value owns its plugins, devices, loaded images, mapping
//! tables and memory managers. [`Runtime::new`] builds it;
//! [`Runtime::shutdown`] tears it down in one fixed order and returns a
//! [`ShutdownReport`]. See DESIGN.md for the ownership graph and the
//! teardown order.
//!
//! The typed API ([`DeviceBuffer`], [`Image`], [`Kernel`]) borrows the
//! runtime; the raw device operations ([`Device::alloc`],
//! [`Device::submit`], [`Device::run_region`] …) are for callers that
//! manage device memory and images themselves.
//!
//! This crate is LLVM's plugin manager, not its OpenMP semantics: those
//! (registration of host binaries, `target data`, target regions,
//! `omp_target_*`) live in the `omptarget-openmp` crate (`openmp/`), which
//! the C shim uses.
//!
//! # The OpenMP layer's interface
//!
//! Beyond the typed API, what `omptarget-openmp` needs from this crate is
//! public on purpose, and is this:
//!
//! * [`mapping`]: LLVM 14's host-to-device mapping table, reference counts
//!   and shadow pointers. Each [`Device`] owns one
//!   ([`Device::mappings`], reported at shutdown); the OpenMP layer drives
//!   it, handing it device memory as a [`mapping::DeviceMemory`]. This
//!   module is that interface; a program using the typed API needs none of
//!   it.
//! * Raw device operations, which are the plugin's entries behind the
//!   device's own checks: [`Device::ensure_initialized_with_requires`],
//!   [`Device::alloc`] / [`Device::free`], [`Device::submit`] /
//!   [`Device::retrieve`], [`Device::can_exchange_with`] /
//!   [`Device::exchange`], [`Device::load_image_kept`] /
//!   [`Device::unload_image`], [`Device::run_region`] (with
//!   [`RegionLaunch`]).
//! * The plugins in load order and their devices, as LLVM numbers them:
//!   [`Runtime::plugin_count`], [`Runtime::plugin`],
//!   [`Runtime::plugin_device`], [`plugin::Plugin::device_count`],
//!   [`plugin::Plugin::is_valid_binary`],
//!   [`plugin::Plugin::supports_empty_images`]; the program's `requires`
//!   flags reach a device through
//!   [`Device::ensure_initialized_with_requires`], their one route.
//! * [`abi`]: the C ABI's types (re-exported `omptarget-abi`).

#![deny(missing_docs)]

mod api;
pub mod config;
pub mod device;
mod error;
/// Device images built from parts, for the raw device layer's users (the
/// OpenMP layer's tests); the typed API's [`Image`] is what programs use.
#[doc(hidden)]
pub mod image;
mod launch;
pub mod mapping;
/// The caching memory manager. Public only with the `internals` feature,
/// for the benchmarks in `benches/`; users see it through [`Device`].
#[cfg(feature = "internals")]
pub mod memory;
#[cfg(not(feature = "internals"))]
mod memory;
pub mod plugin;
pub mod report;
mod runtime;
mod step_outcome;
mod sync;
pub(crate) mod trace;

pub use api::{
    scope, DeviceBuffer, DeviceCopy, Event, Global, Image, Kernel, KernelArg, KernelParam,
    KernelSignature, LaunchArgs, LaunchConfig, Ptr, PtrMut, Queue, QueuedKernelArg,
    QueuedLaunchArgs, Scope,
};
pub use config::Config;
pub use device::{Device, DevicePtr, LoadedImage};
pub use error::{Error, Result};
pub use launch::RegionLaunch;
pub use plugin::{PluginInfo, SkipReason, SkippedPlugin};
pub use report::{Phase, ShutdownReport, StepOutcome, TeardownStep};
pub use runtime::Runtime;

/// How many [`Runtime`]s of one process can use the built-in host plugin at
/// the same time (each has its own instance, with its own devices and
/// lifecycle); 0 without feature `builtin-host`.
pub const BUILTIN_HOST_INSTANCES: usize = plugin::builtin::HOST_INSTANCES;

pub use omptarget_abi as abi;
