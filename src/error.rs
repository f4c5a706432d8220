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
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device.
        plugin: String,
        /// Why initialisation failed, as recorded at the first attempt.
        reason: String,
    },

    /// The plugin called its destruction callback (or was closed): the
    /// runtime will not call into it again.
    #[error("plugin {plugin} was destroyed; it cannot be called any more")]
    PluginDead {
        /// File name of the destroyed plugin library.
        plugin: String,
    },

    /// The kernel ended its thread (`pthread_exit`, or a cancellation acted
    /// upon inside it). The exit is pending
    /// ([`omptarget_thread_exit::take_pending`]): the caller returns
    /// without printing anything, and the outermost frame resumes it.
    #[error("the kernel ended its thread (pthread_exit or cancellation)")]
    ThreadExiting,

    /// A plugin entry returned a failure code.
    #[error("{entry} failed on device {device} ({plugin}) with code {code}{}", reason_suffix(.reason))]
    PluginCallFailed {
        /// File name of the plugin library whose entry failed.
        plugin: String,
        /// Runtime-wide number of the device the entry was called for.
        device: usize,
        /// The failed entry, without its `__tgt_rtl_` prefix (e.g. `data_submit`).
        entry: &'static str,
        /// The code the entry returned (anything but `OFFLOAD_SUCCESS`).
        code: i32,
        /// The plugin's own message about the failure, where it gives one
        /// (`__tgt_rtl_last_error_message`).
        reason: Option<String>,
    },

    /// The plugin does not export an optional entry this operation needs.
    #[error("plugin {plugin} does not support {what}")]
    Unsupported {
        /// File name of the plugin library lacking the entry.
        plugin: String,
        /// The operation that needs the missing entry.
        what: &'static str,
    },

    /// A typed launch asked for more teams, or more threads per team,
    /// than one launch runs on the device (its
    /// [`crate::DeviceProperties::max_teams`] and `max_threads`): refused
    /// rather than run with fewer. See [`crate::LaunchConfig`].
    #[error(
        "device {device} ({plugin}) cannot honour LaunchConfig::teams({teams}, {threads}): one \
         launch there runs {} teams of {} threads each",
        limit(.max_teams),
        limit(.max_threads)
    )]
    UnsupportedLaunch {
        /// The device's runtime-wide number.
        device: usize,
        /// File name of its plugin library.
        plugin: String,
        /// Teams asked for (0: the plugin's choice).
        teams: u32,
        /// Threads per team asked for (0: the plugin's choice).
        threads: u32,
        /// The most teams per launch, if the plugin says.
        max_teams: Option<u64>,
        /// The most threads per team, if the plugin says.
        max_threads: Option<u64>,
    },

    /// The device could not provide the memory, even after the memory
    /// manager released everything it cached.
    #[error("device {device} ({plugin}) is out of memory allocating {size} bytes")]
    OutOfMemory {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device.
        plugin: String,
        /// The requested allocation size, in bytes.
        size: usize,
    },

    /// `free` of an address that is not a live allocation of this device
    /// (never allocated here, or already freed).
    #[error("{ptr:#x} is not a live allocation of device {device}")]
    UnknownDevicePointer {
        /// Runtime-wide number of the device asked to free it.
        device: usize,
        /// The device address passed to `free`.
        ptr: usize,
    },

    /// An argument the runtime rejects before calling any plugin.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A global of an image was read or written while launches of the
    /// image's kernels were queued and not yet synchronised: they may run
    /// at any time and touch it (see [`crate::Global`]). Synchronise the
    /// queue ([`crate::ScopedQueue::synchronize`]) or end the scope first.
    #[error(
        "global {global:?} cannot be read or written while launches of its image's kernels are queued on {queues} queue(s); synchronise the queue (or end the scope) first"
    )]
    LaunchesPending {
        /// The global's name.
        global: String,
        /// How many queues hold such launches.
        queues: usize,
    },

    /// [`crate::Global::write`] to a global the device cannot write from
    /// the host: the plugin marked it read-only when it loaded the image
    /// (the host plugin does for a `const` global, which lies in the
    /// image's read-only memory, where a copy would end the process with
    /// SIGSEGV). Nothing was written; reading it is allowed.
    #[error(
        "global {global:?} on device {device} is read-only (a const global); it cannot be written"
    )]
    ReadOnlyGlobal {
        /// Runtime-wide number of the device the image is loaded on.
        device: usize,
        /// The global's name.
        global: String,
    },

    /// A host/device copy whose lengths disagree.
    #[error(
        "length mismatch: the device buffer holds {device_len} elements, the host slice {host_len}"
    )]
    LengthMismatch {
        /// Length of the device buffer, in elements.
        device_len: usize,
        /// Length of the host slice, in elements.
        host_len: usize,
    },

    /// The plugin rejected an image (`is_valid_binary` returned 0) or the
    /// image is malformed.
    #[error("image rejected by device {device} ({plugin}): {reason}")]
    InvalidImage {
        /// Runtime-wide number of the device the image was meant for.
        device: usize,
        /// File name of the plugin library serving the device.
        plugin: String,
        /// Why the image was rejected, or what is malformed in it.
        reason: String,
    },

    /// `__tgt_rtl_load_binary` returned no table.
    #[error("device {device} ({plugin}) failed to load the image{}", reason_suffix(.reason))]
    ImageLoadFailed {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library whose `load_binary` failed.
        plugin: String,
        /// The plugin's (or the loader's) reason, where it gives one.
        reason: Option<String>,
    },

    /// Plugins were asked for and none could be loaded.
    #[error("no plugin could be loaded; tried:{}", tried_list(.tried))]
    NoPluginLoaded {
        /// Every plugin tried, with why it was skipped.
        tried: Vec<crate::SkippedPlugin>,
    },

    /// The plugin's target table disagrees with the image's entries.
    #[error(
        "device {device}: target table entry {index} is {found:?}, the image says {expected:?}"
    )]
    EntryMismatch {
        /// Runtime-wide number of the device the image was loaded on.
        device: usize,
        /// Index of the first disagreeing entry (for a count mismatch, the
        /// shorter length).
        index: usize,
        /// The image's entry name there (or its entry count).
        expected: String,
        /// The plugin table's entry name there (or its entry count).
        found: String,
    },

    /// A kernel name that the image does not have.
    #[error("no kernel named {name:?} in the image (it has: {available:?})")]
    KernelNotFound {
        /// The kernel name that was asked for.
        name: String,
        /// The entry names the image does have, in table order.
        available: Vec<String>,
    },

    /// An environment variable with a value the runtime cannot use.
    #[error("environment variable {var}={value:?}: {reason}")]
    InvalidEnv {
        /// Name of the environment variable.
        var: &'static str,
        /// The value it was set to.
        value: String,
        /// Why the value is not usable.
        reason: String,
    },

    /// The directory of the runtime's own library could not be found, so
    /// the default plugins cannot be looked up.
    #[error("cannot find the runtime library's directory: {0}")]
    PluginDirectory(String),

    /// Reading a file (an image) failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// `": reason"`, or nothing.
fn reason_suffix(reason: &Option<String>) -> String {
    match reason {
        Some(reason) => format!(": {reason}"),
        None => String::new(),
    }
}

/// One line per plugin tried.
fn tried_list(tried: &[crate::SkippedPlugin]) -> String {
    if tried.is_empty() {
        return " nothing".to_owned();
    }
    tried.iter().map(|skip| format!("\n  {skip}")).collect()
}

/// A launch limit for a message: "at most N", or "any number of" when the
/// plugin does not say.
fn limit(most: &Option<u64>) -> String {
    most.map_or_else(|| "any number of".to_owned(), |n| format!("at most {n}"))
}
