//! omptarget: an OpenMP offload runtime whose whole lifecycle is explicit.
//!
//! A [`Runtime`] value owns its plugins, devices, loaded images, mapping
//! tables and memory managers. [`Runtime::new`] builds it;
//! [`Runtime::shutdown`] tears it down in one fixed order and returns a
//! [`ShutdownReport`]. See DESIGN.md for the ownership graph and the
//! teardown order.

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
pub mod trace;

pub use config::Config;
pub use device::{Device, DevicePtr};
pub use error::{Error, Result};
pub use report::ShutdownReport;
pub use runtime::Runtime;

pub use omptarget_abi as abi;
