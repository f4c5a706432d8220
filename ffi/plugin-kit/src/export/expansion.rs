use crate::{Backend, DeviceId, ImageRef, InitCause, LoadOptions, PluginError, TeamConfig};
use omptarget_abi::{AllocKind, DeviceImage, TargetTable, OFFLOAD_SUCCESS};
use std::ffi::c_void;
use std::ptr::NonNull;

/// One device; every operation on it is refused.
struct Inert;

impl Backend for Inert {
    const NAME: &'static str = "inert";

    fn init(_cause: InitCause) -> crate::error::Result<Self> {
        Ok(Inert)
    }

    fn deinit(self) -> crate::error::Result<()> {
        Ok(())
    }

    fn number_of_devices(&self) -> usize {
        1
    }

    fn is_valid_binary(&self, _image: &ImageRef<'_>) -> bool {
        false
    }

    fn init_device(&self, _device: DeviceId) -> crate::error::Result<()> {
        Ok(())
    }

    fn deinit_device(&self, _device: DeviceId) -> crate::error::Result<()> {
        Ok(())
    }

    fn load_binary(
        &self,
        _device: DeviceId,
        _image: &ImageRef<'_>,
        _options: LoadOptions,
    ) -> crate::error::Result<NonNull<TargetTable>> {
        Err(PluginError::Unsupported("load_binary"))
    }

    fn unload_binary(
        &self,
        _device: DeviceId,
        _image: NonNull<DeviceImage>,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("unload_binary"))
    }

    fn data_alloc(
        &self,
        _device: DeviceId,
        _size: usize,
        _host_ptr: *mut c_void,
        _kind: AllocKind,
    ) -> crate::error::Result<NonNull<c_void>> {
        Err(PluginError::Unsupported("data_alloc"))
    }

    fn data_delete(
        &self,
        _device: DeviceId,
        _tgt_ptr: NonNull<c_void>,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_delete"))
    }

    unsafe fn data_submit(
        &self,
        _device: DeviceId,
        _tgt_ptr: NonNull<c_void>,
        _host_ptr: NonNull<c_void>,
        _size: usize,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_submit"))
    }

    unsafe fn data_retrieve(
        &self,
        _device: DeviceId,
        _host_ptr: NonNull<c_void>,
        _tgt_ptr: NonNull<c_void>,
        _size: usize,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_retrieve"))
    }

    unsafe fn run_region(
        &self,
        _device: DeviceId,
        _entry: NonNull<c_void>,
        _args: &[*mut c_void],
        _teams: Option<TeamConfig>,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("run_region"))
    }

    fn print_device_info(&self, _device: DeviceId) {}
}

crate::export_plugin!(Inert);

#[test]
fn the_expansion_is_a_working_plugin() {
    let table = crate::__entry_table!();
    assert_eq!(__tgt_rtl_init_plugin(), OFFLOAD_SUCCESS);
    // SAFETY: `number_of_devices` takes no arguments.
    assert_eq!(unsafe { (table.number_of_devices)() }, 1);
    assert_eq!(__tgt_rtl_init_device(0), OFFLOAD_SUCCESS);
    // A load flag the kit does not know fails before the image is read.
    // SAFETY: a null image is allowed (refused by the entry).
    let table = unsafe { (table.load_binary_flags.unwrap())(0, std::ptr::null_mut(), 1 << 31) };
    assert!(table.is_null());
    let reason = crate::last_error::take().unwrap_or_default();
    assert!(
        reason.starts_with("__tgt_rtl_load_binary_flags: ")
            && reason.contains("unknown load flags"),
        "{reason}"
    );
    assert_eq!(__tgt_rtl_deinit_plugin(), OFFLOAD_SUCCESS);
}
