//! The error type of backend calls and entry checks.

use std::ffi::c_void;
use std::ptr::NonNull;

/// Why an entry failed. The entry layer prints it (see [`crate::diagnostics`])
/// and returns `OFFLOAD_FAIL`, a null pointer or 0 to the runtime.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A device id outside `0..number_of_devices`.
    #[error("device id {id} is out of range: this plugin has {count} device(s)")]
    DeviceOutOfRange {
        /// The device id the caller passed.
        id: i32,
        /// How many devices the plugin has.
        count: usize,
    },
    /// An operation on a device that `__tgt_rtl_init_device` did not set up
    /// (or that was deinitialised since).
    #[error("device {0} is not initialised (call __tgt_rtl_init_device first)")]
    DeviceNotInitialised(usize),
    /// The plugin was deinitialised, or its explicit initialisation failed.
    #[error("the plugin is not initialised (call __tgt_rtl_init_plugin first)")]
    NotInitialised,
    /// `__tgt_rtl_deinit_plugin` while other calls stayed inside the
    /// plugin for the whole wait (a kernel still running on another thread,
    /// or a kernel that called back into the plugin): the state is kept,
    /// and a later deinit can succeed.
    #[error(
        "the plugin is still in use by {readers} call(s) after {waited_ms} ms \
         (a kernel still running?); its state is kept"
    )]
    InUse {
        /// Calls counted inside the plugin when the wait ended.
        readers: usize,
        /// How long deinit waited for them.
        waited_ms: u128,
    },
    /// A pointer argument that must not be null was null.
    #[error("argument `{0}` is a null pointer")]
    NullPointer(&'static str),
    /// An argument with an invalid value (negative size, bad kind ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The device image is not one this backend runs, or is malformed.
    #[error("invalid device image: {0}")]
    InvalidImage(String),
    /// The device has no room for an allocation. The runtime answers it
    /// (its memory manager frees its cache and retries, then reports its
    /// own out-of-memory error), so the entry layer prints it only as a
    /// debug line, as LLVM's plugins do.
    #[error("out of device memory: {0}")]
    OutOfMemory(String),
    /// The backend does not implement this optional operation.
    #[error("{0} is not supported by this plugin")]
    Unsupported(&'static str),
    /// Anything else the backend reports.
    #[error("{0}")]
    Backend(String),
}

impl PluginError {
    /// A backend failure with a message.
    pub fn backend(message: impl Into<String>) -> Self {
        Self::Backend(message.into())
    }
}

/// The result type of backend calls.
pub type Result<T, E = PluginError> = std::result::Result<T, E>;

/// Free each block of `ptrs` with `free`, setting each slot freed to null
/// and leaving the others as they were (a null slot is not freed): the
/// contract of `__tgt_rtl_data_delete_batch`. The error, when some were not
/// freed, counts them and gives the first one's reason.
pub fn delete_each(
    ptrs: &mut [*mut c_void],
    mut free: impl FnMut(NonNull<c_void>) -> Result<()>,
) -> Result<()> {
    let mut failures = BatchFailures::default();
    for slot in ptrs.iter_mut() {
        match NonNull::new(*slot)
            .ok_or(PluginError::NullPointer("ptrs[i]"))
            .and_then(&mut free)
        {
            Ok(()) => *slot = std::ptr::null_mut(),
            Err(error) => failures.add(error),
        }
    }
    failures.into_result(ptrs.len())
}

/// The blocks of a batch delete that were not freed: how many, and the
/// first one's error.
#[derive(Debug, Default)]
pub struct BatchFailures {
    count: usize,
    first: Option<PluginError>,
}

impl BatchFailures {
    /// One more block not freed, for `error`.
    pub fn add(&mut self, error: PluginError) {
        self.count += 1;
        self.first.get_or_insert(error);
    }

    /// `Ok` when there were none; else an error that counts them out of
    /// `total`, with the first one's reason.
    pub fn into_result(self, total: usize) -> Result<()> {
        match self.first {
            None => Ok(()),
            Some(first) => Err(PluginError::Backend(format!(
                "{} of {total} blocks not freed; the first: {first}",
                self.count
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_each_nulls_what_it_freed_and_counts_the_rest() {
        let mut slots: Vec<*mut c_void> = [0x10usize, 0x20, 0, 0x30, 0x40]
            .iter()
            .map(|&a| a as *mut c_void)
            .collect();
        let mut freed = Vec::new();
        let result = delete_each(&mut slots, |ptr| {
            if ptr.as_ptr() as usize == 0x30 {
                Err(PluginError::InvalidArgument("unknown".into()))
            } else {
                freed.push(ptr.as_ptr() as usize);
                Ok(())
            }
        });
        assert_eq!(freed, [0x10, 0x20, 0x40], "a null slot is never passed on");
        let left: Vec<usize> = slots.iter().map(|&p| p as usize).collect();
        assert_eq!(left, [0, 0, 0, 0x30, 0]);
        let message = result.unwrap_err().to_string();
        assert_eq!(
            message,
            "2 of 5 blocks not freed; the first: argument `ptrs[i]` is a null pointer"
        );
        let mut none: [*mut c_void; 0] = [];
        assert!(delete_each(&mut none, |_| unreachable!()).is_ok());
    }
}
