//! A device: one device of one plugin, initialised lazily on first use.
use crate::{abi, Result};
use std::ffi::c_void;

/// An address in a device's memory space (opaque to the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub *mut c_void);
// Safety: a device address is a number; the runtime never dereferences it.
unsafe impl Send for DevicePtr {}
unsafe impl Sync for DevicePtr {}

/// The entries of an image as loaded on a device (its target table).
#[derive(Debug)]
pub struct LoadedImage {
    /// Copied from the plugin's `__tgt_target_table`, in image order.
    pub entries: Vec<abi::OffloadEntry>,
}

/// One device. Owned by the [`crate::Runtime`]; users borrow it.
pub struct Device {
    _todo: (),
}

impl Device {
    /// The runtime-wide device number (0-based, in plugin order).
    pub fn id(&self) -> usize {
        todo!("H2")
    }
    /// Name of the plugin serving this device.
    pub fn plugin_name(&self) -> &str {
        todo!("H2")
    }
    /// Initialise the device (idempotent; thread-safe).
    pub fn ensure_initialized(&self) -> Result<()> {
        todo!("H2")
    }
    /// Allocate device memory, through the memory manager for
    /// `Default`/`Device` kinds.
    pub fn alloc(
        &self,
        _size: usize,
        _host_ptr: *mut c_void,
        _kind: abi::AllocKind,
    ) -> Result<DevicePtr> {
        todo!("H2")
    }
    /// Free memory returned by [`Device::alloc`]; unknown pointers are an error.
    pub fn free(&self, _ptr: DevicePtr) -> Result<()> {
        todo!("H2")
    }
    /// Copy `size` bytes host -> device.
    ///
    /// # Safety
    /// `src` is readable for `size` bytes; `dst..dst+size` is device memory.
    pub unsafe fn submit(&self, _dst: DevicePtr, _src: *const c_void, _size: usize) -> Result<()> {
        todo!("H2")
    }
    /// Copy `size` bytes device -> host.
    ///
    /// # Safety
    /// `dst` is writable for `size` bytes; `src..src+size` is device memory.
    pub unsafe fn retrieve(&self, _dst: *mut c_void, _src: DevicePtr, _size: usize) -> Result<()> {
        todo!("H2")
    }
    /// Load an image; the device keeps it until shutdown (or unload).
    ///
    /// # Safety
    /// `image` points to a valid device image that outlives the load.
    pub unsafe fn load_image(&self, _image: *mut abi::DeviceImage) -> Result<LoadedImage> {
        todo!("H2")
    }
    /// The per-device host->device mapping table.
    pub fn mappings(&self) -> &crate::mapping::MappingTable {
        todo!("H2")
    }
}
