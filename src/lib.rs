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
//! [`Device::submit`], [`Device::run_region`] …) are what the OpenMP layer
//! ([`offload`]) builds on.

pub mod api;
pub mod config;
pub mod device;
pub mod error;
pub mod image;
pub mod launch;
pub mod mapping;
pub mod memory;
pub mod offload;
pub mod plugin;
pub mod report;
pub mod runtime;
mod step_outcome;
mod sync;
pub mod trace;

pub use api::{DeviceBuffer, DeviceCopy, Image, Kernel, KernelArg, LaunchConfig};
pub use config::Config;
pub use device::{Device, DevicePtr, LoadedImage};
pub use error::{Error, Result};
pub use launch::RegionLaunch;
pub use plugin::{PluginInfo, SkipReason, SkippedPlugin};
pub use report::{Phase, ShutdownReport, StepOutcome, TeardownStep};
pub use runtime::Runtime;

pub use omptarget_abi as abi;
