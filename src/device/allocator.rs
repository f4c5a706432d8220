//! The memory manager's view of a device: `data_alloc`/`data_delete` of its
//! plugin.
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
            .call(|e| unsafe { (e.data_alloc)(self.local_id, size64, host_ptr, kind as i32) })?;
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
            .call(|e| unsafe { (e.data_delete)(self.local_id, ptr.0) })?;
        super::check_code(&self.plugin, self.device, "data_delete", code)
    }

    fn device_number(&self) -> usize {
        self.device
    }
}
