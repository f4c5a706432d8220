//! The memory manager's view of a device: `data_alloc`/`data_delete` (and,
//! for a drain, `data_delete_batch` when exported) of its plugin.
use crate::memory::DeviceAllocator;
use crate::plugin::Plugin;
use crate::{abi, DevicePtr, Error, Result};
use std::ffi::c_void;
use std::sync::Arc;

/// Allocates on one device through its plugin.
pub(crate) struct PluginAllocator {
    plugin: Arc<Plugin>,
    device: usize,
    local_id: i32,
}

impl PluginAllocator {
    pub fn new(plugin: Arc<Plugin>, device: usize, local_id: i32) -> Self {
        PluginAllocator {
            plugin,
            device,
            local_id,
        }
    }

    /// `data_delete` per block.
    fn free_each(&self, ptrs: &[DevicePtr]) -> Vec<(usize, Error)> {
        ptrs.iter()
            .enumerate()
            .filter_map(|(i, &ptr)| self.free(ptr).err().map(|e| (i, e)))
            .collect()
    }
}

/// The error of each block a failed batch left: a copy of the batch's
/// (`Error` is not `Clone`; these two are all `Plugin::call` and
/// `check_code` return).
fn batch_failure(error: &Error) -> Error {
    match error {
        Error::PluginCallFailed {
            plugin,
            device,
            entry,
            code,
            reason,
        } => Error::PluginCallFailed {
            plugin: plugin.clone(),
            device: *device,
            entry,
            code: *code,
            reason: reason.clone(),
        },
        Error::PluginDead { plugin } => Error::PluginDead {
            plugin: plugin.clone(),
        },
        other => Error::InvalidArgument(other.to_string()),
    }
}

impl DeviceAllocator for PluginAllocator {
    fn allocate(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: abi::AllocKind,
    ) -> Result<DevicePtr> {
        let size64 = super::to_i64(size)?;
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_alloc");
        // SAFETY: a valid device number, size and kind; `host_ptr` is only a
        // hint the plugin may use (never dereferenced by LLVM's plugins).
        let ptr = self
            .plugin
            .call(|e| unsafe { e.data_alloc(self.local_id, size64, host_ptr, kind as i32) })?;
        if ptr.is_null() {
            tracing::debug!(plugin = %self.plugin.name(), device = self.device, size, "data_alloc returned null");
            Err(Error::OutOfMemory {
                device: self.device,
                plugin: self.plugin.name().to_owned(),
                size,
            })
        } else {
            Ok(DevicePtr::from_raw(ptr))
        }
    }

    fn free(&self, ptr: DevicePtr) -> Result<()> {
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_delete");
        // SAFETY: `ptr` came from data_alloc of this device.
        let code = self
            .plugin
            .call(|e| unsafe { e.data_delete(self.local_id, ptr.0) })?;
        super::check_code(&self.plugin, self.device, "data_delete", code)
    }

    /// One `data_delete_batch` call when the plugin has that entry (ours
    /// do), else `data_delete` per block. A failed batch leaves the blocks
    /// it did not free non-null; each is reported with the batch's error.
    fn free_many(&self, ptrs: &[DevicePtr]) -> Vec<(usize, Error)> {
        let (true, Ok(n)) = (
            self.plugin
                .exports(crate::abi::plugin::OptionalEntry::DataDeleteBatch),
            i64::try_from(ptrs.len()),
        ) else {
            return self.free_each(ptrs);
        };
        if n == 0 {
            return Vec::new();
        }
        let mut slots: Vec<*mut c_void> = ptrs.iter().map(|p| p.0).collect();
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_delete_batch");
        // SAFETY: `slots` holds `n` pointers data_alloc of this device
        // returned, readable and writable; the plugin nulls those it frees.
        // A dead plugin is not called (`call`): every block then fails.
        let code = self
            .plugin
            .call(|e| unsafe { e.data_delete_batch(self.local_id, slots.as_mut_ptr(), n) })
            .map(|code| code.unwrap_or(crate::abi::OFFLOAD_FAIL))
            .and_then(|code| {
                super::check_code(&self.plugin, self.device, "data_delete_batch", code)
            });
        match code {
            Ok(()) => Vec::new(),
            Err(error) => slots
                .iter()
                .enumerate()
                .filter(|(_, slot)| !slot.is_null())
                .map(|(index, _)| (index, batch_failure(&error)))
                .collect(),
        }
    }

    fn device_number(&self) -> usize {
        self.device
    }
}
