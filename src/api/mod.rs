//! The typed Rust API over a [`crate::Runtime`]: device buffers, images and
//! kernels. Every handle borrows the runtime, so none can outlive
//! [`crate::Runtime::shutdown`]:
//!
//! ```compile_fail,E0505
//! use omptarget::{Config, DeviceBuffer, Runtime};
//! let runtime = Runtime::new(Config::default())?;
//! let buffer = DeviceBuffer::<f32>::new(runtime.device(0)?, 16)?;
//! let report = runtime.shutdown(); // error: `runtime` is still borrowed
//! drop(buffer);
//! # Ok::<(), omptarget::Error>(())
//! ```
//!
//! The same with the buffer gone before the shutdown compiles:
//!
//! ```no_run
//! use omptarget::{Config, DeviceBuffer, Runtime};
//! let runtime = Runtime::new(Config::default())?;
//! let buffer = DeviceBuffer::<f32>::new(runtime.device(0)?, 16)?;
//! drop(buffer);
//! let report = runtime.shutdown();
//! # Ok::<(), omptarget::Error>(())
//! ```
mod buffer;
mod kernel;

pub use buffer::{DeviceBuffer, DeviceCopy};
pub use kernel::{Image, Kernel, KernelArg, LaunchConfig, ScalarArg};
