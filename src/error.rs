//! The typed error of the runtime's library API.

use std::path::PathBuf;

/// Result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the runtime's API can fail with.
///
/// Every variant names what failed (device, plugin, entry) so that a message
/// alone is enough to find the cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No device has this number.
    #[error("invalid device number {0}")]
    InvalidDevice(i64),

    /// The plugin's `__tgt_rtl_init_device` failed; remembered and reported
    /// on every later use of the device.
    #[error("device {device} ({plugin}) failed to initialise: {reason}")]
    DeviceInitFailed {
        device: usize,
        plugin: String,
        reason: String,
    },

    /// The plugin called its destruction callback (or was closed): the
    /// runtime will not call into it again.
    #[error("plugin {plugin} was destroyed; it cannot be called any more")]
    PluginDead { plugin: String },

    /// The kernel ended its thread (`pthread_exit`, or a cancellation acted
    /// upon inside it). The exit is pending
    /// ([`omptarget_thread_exit::take_pending`]): the caller returns
    /// without printing anything, and the outermost frame resumes it.
    #[error("the kernel ended its thread (pthread_exit or cancellation)")]
    ThreadExiting,

    /// A plugin entry returned a failure code.
    #[error("{entry} failed on device {device} ({plugin}) with code {code}")]
    PluginCallFailed {
        plugin: String,
        device: usize,
        entry: &'static str,
        code: i32,
    },

    /// The plugin does not export an optional entry this operation needs.
    #[error("plugin {plugin} does not support {what}")]
    Unsupported { plugin: String, what: &'static str },

    /// The device could not provide the memory, even after the memory
    /// manager released everything it cached.
    #[error("device {device} ({plugin}) is out of memory allocating {size} bytes")]
    OutOfMemory {
        device: usize,
        plugin: String,
        size: usize,
    },

    /// `free` of an address that is not a live allocation of this device
    /// (never allocated here, or already freed).
    #[error("{ptr:#x} is not a live allocation of device {device}")]
    UnknownDevicePointer { device: usize, ptr: usize },

    /// An argument the runtime rejects before calling any plugin.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A host/device copy whose lengths disagree.
    #[error(
        "length mismatch: the device buffer holds {device_len} elements, the host slice {host_len}"
    )]
    LengthMismatch { device_len: usize, host_len: usize },

    /// The plugin rejected an image (`is_valid_binary` returned 0) or the
    /// image is malformed.
    #[error("image rejected by device {device} ({plugin}): {reason}")]
    InvalidImage {
        device: usize,
        plugin: String,
        reason: String,
    },

    /// `__tgt_rtl_load_binary` returned no table.
    #[error("device {device} ({plugin}) failed to load the image")]
    ImageLoadFailed { device: usize, plugin: String },

    /// The plugin's target table disagrees with the image's entries.
    #[error(
        "device {device}: target table entry {index} is {found:?}, the image says {expected:?}"
    )]
    EntryMismatch {
        device: usize,
        index: usize,
        expected: String,
        found: String,
    },

    /// A kernel name that the image does not have.
    #[error("no kernel named {name:?} in the image (it has: {available:?})")]
    KernelNotFound {
        name: String,
        available: Vec<String>,
    },

    /// An environment variable with a value the runtime cannot use.
    #[error("environment variable {var}={value:?}: {reason}")]
    InvalidEnv {
        var: &'static str,
        value: String,
        reason: String,
    },

    /// The directory of the runtime's own library could not be found, so
    /// the default plugins cannot be looked up.
    #[error("cannot find the runtime library's directory: {0}")]
    PluginDirectory(String),

    /// Reading a file (an image) failed.
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
