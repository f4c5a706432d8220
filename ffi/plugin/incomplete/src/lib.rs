//! `libomptarget.rtl.incomplete.so`: a plugin that lacks two required
//! entries, `__tgt_rtl_data_delete` and `__tgt_rtl_run_target_team_region`,
//! for the runtime's "a plugin missing a required entry is skipped" test.
//!
//! It exports the other eight required entries (and nothing else), backed
//! by the host backend so that they would behave if called. It runs no code
//! at load time: no constructors, and no safety net either (it never
//! registers a destruction callback), so loading and closing it is inert.

use omptarget_plugin_host::HostBackend;
use omptarget_plugin_kit::abi::{DeviceImage, TargetTable};
use omptarget_plugin_kit::entry_bodies;
use omptarget_plugin_kit::PluginCell;
use std::ffi::c_void;

/// Plugin state, created lazily by the first entry call.
static PLUGIN: PluginCell<HostBackend> = PluginCell::new();

/// `__tgt_rtl_number_of_devices`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
    entry_bodies::number_of_devices(&PLUGIN)
}

/// `__tgt_rtl_is_valid_binary`.
///
/// # Safety
/// `image` is null or a valid `__tgt_device_image`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(image: *mut DeviceImage) -> i32 {
    // SAFETY: `image` is null (rejected by the kit) or a valid
    // `__tgt_device_image` (our caller's contract), as the kit requires.
    unsafe { entry_bodies::is_valid_binary(&PLUGIN, image) }
}

/// `__tgt_rtl_init_device`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_init_device(device: i32) -> i32 {
    entry_bodies::init_device(&PLUGIN, device)
}

/// `__tgt_rtl_load_binary`.
///
/// # Safety
/// `image` is null or a valid `__tgt_device_image`.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_load_binary(
    device: i32,
    image: *mut DeviceImage,
) -> *mut TargetTable {
    // SAFETY: `image` is null (rejected by the kit) or a valid
    // `__tgt_device_image` whose bytes it describes (our caller's contract).
    unsafe { entry_bodies::load_binary(&PLUGIN, device, image) }
}

/// `__tgt_rtl_data_alloc`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_data_alloc(
    device: i32,
    size: i64,
    host_ptr: *mut c_void,
    kind: i32,
) -> *mut c_void {
    entry_bodies::data_alloc(&PLUGIN, device, size, host_ptr, kind)
}

/// `__tgt_rtl_data_submit`.
///
/// # Safety
/// Both pointers are valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_submit(
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: both pointers are valid for `size` bytes (our caller's
    // contract), the access the kit's `data_submit` makes.
    unsafe { entry_bodies::data_submit(&PLUGIN, device, tgt_ptr, host_ptr, size, None) }
}

/// `__tgt_rtl_data_retrieve`.
///
/// # Safety
/// Both pointers are valid for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_data_retrieve(
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
) -> i32 {
    // SAFETY: both pointers are valid for `size` bytes (our caller's
    // contract), the access the kit's `data_retrieve` makes.
    unsafe { entry_bodies::data_retrieve(&PLUGIN, device, host_ptr, tgt_ptr, size, None) }
}

/// `__tgt_rtl_run_target_region`.
///
/// # Safety
/// `entry` is from this device's target table; `args` and `offsets` hold
/// `num_args` values each.
#[no_mangle]
pub unsafe extern "C-unwind" fn __tgt_rtl_run_target_region(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
) -> i32 {
    // SAFETY: `entry` is from this device's target table and `args` and
    // `offsets` hold `num_args` values each (our caller's contract), which
    // is what the kit's `run_region` requires.
    unsafe { entry_bodies::run_region(&PLUGIN, device, entry, args, offsets, num_args, None, None) }
}

const _: () = {
    use omptarget_plugin_kit::abi::plugin as p;
    let _: p::NumberOfDevicesFn = __tgt_rtl_number_of_devices;
    let _: p::IsValidBinaryFn = __tgt_rtl_is_valid_binary;
    let _: p::InitDeviceFn = __tgt_rtl_init_device;
    let _: p::LoadBinaryFn = __tgt_rtl_load_binary;
    let _: p::DataAllocFn = __tgt_rtl_data_alloc;
    let _: p::DataSubmitFn = __tgt_rtl_data_submit;
    let _: p::DataRetrieveFn = __tgt_rtl_data_retrieve;
    let _: p::RunTargetRegionFn = __tgt_rtl_run_target_region;
};
