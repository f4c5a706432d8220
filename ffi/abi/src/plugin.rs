//! The plugin ABI: the `__tgt_rtl_*` entry points a plugin library exports.
//!
//! The required and optional entries are those of LLVM 14's plugins
//! (`omptargetplugin.h`). The lifecycle entries at the end are this
//! project's: all optional, so that LLVM's own plugins still load. DESIGN.md
//! ("The plugin contract") says who calls what, in which order, and what a
//! plugin may assume.

use crate::{AsyncInfo, DeviceImage, DeviceInfo, TargetTable};
use core::ffi::{c_char, c_void};

// ---- required (LLVM 14) ----
pub type NumberOfDevicesFn = unsafe extern "C" fn() -> i32;
pub type IsValidBinaryFn = unsafe extern "C" fn(image: *mut DeviceImage) -> i32;
pub type InitDeviceFn = unsafe extern "C" fn(device: i32) -> i32;
pub type LoadBinaryFn =
    unsafe extern "C" fn(device: i32, image: *mut DeviceImage) -> *mut TargetTable;
pub type DataAllocFn =
    unsafe extern "C" fn(device: i32, size: i64, host_ptr: *mut c_void, kind: i32) -> *mut c_void;
pub type DataSubmitFn = unsafe extern "C" fn(
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
) -> i32;
pub type DataRetrieveFn = unsafe extern "C" fn(
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
) -> i32;
pub type DataDeleteFn = unsafe extern "C" fn(device: i32, tgt_ptr: *mut c_void) -> i32;
pub type RunTargetRegionFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
) -> i32;
pub type RunTargetTeamRegionFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
    num_teams: i32,
    thread_limit: i32,
    loop_tripcount: u64,
) -> i32;

// ---- optional (LLVM 14) ----
pub type IsDataExchangableFn = unsafe extern "C" fn(src_device: i32, dst_device: i32) -> i32;
pub type SupportsEmptyImagesFn = unsafe extern "C" fn() -> i32;
pub type InitRequiresFn = unsafe extern "C" fn(requires_flags: i64) -> i64;
pub type DataSubmitAsyncFn = unsafe extern "C" fn(
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
pub type DataRetrieveAsyncFn = unsafe extern "C" fn(
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
pub type DataExchangeFn = unsafe extern "C" fn(
    src_device: i32,
    src_ptr: *mut c_void,
    dst_device: i32,
    dst_ptr: *mut c_void,
    size: i64,
) -> i32;
pub type DataExchangeAsyncFn = unsafe extern "C" fn(
    src_device: i32,
    src_ptr: *mut c_void,
    dst_device: i32,
    dst_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
pub type RunTargetRegionAsyncFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
    async_info: *mut AsyncInfo,
) -> i32;
pub type RunTargetTeamRegionAsyncFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
    num_teams: i32,
    thread_limit: i32,
    loop_tripcount: u64,
    async_info: *mut AsyncInfo,
) -> i32;
pub type SynchronizeFn = unsafe extern "C" fn(device: i32, async_info: *mut AsyncInfo) -> i32;
pub type SetInfoFlagFn = unsafe extern "C" fn(flags: u32);
pub type PrintDeviceInfoFn = unsafe extern "C" fn(device: i32);
pub type CreateEventFn = unsafe extern "C" fn(device: i32, event: *mut *mut c_void) -> i32;
pub type RecordEventFn =
    unsafe extern "C" fn(device: i32, event: *mut c_void, async_info: *mut AsyncInfo) -> i32;
pub type WaitEventFn =
    unsafe extern "C" fn(device: i32, event: *mut c_void, async_info: *mut AsyncInfo) -> i32;
pub type SyncEventFn = unsafe extern "C" fn(device: i32, event: *mut c_void) -> i32;
pub type DestroyEventFn = unsafe extern "C" fn(device: i32, event: *mut c_void) -> i32;
pub type InitAsyncInfoFn =
    unsafe extern "C" fn(device: i32, async_info: *mut *mut AsyncInfo) -> i32;
pub type InitDeviceInfoFn = unsafe extern "C" fn(
    device: i32,
    device_info: *mut DeviceInfo,
    err_str: *mut *const c_char,
) -> i32;

// ---- this project's lifecycle entries (all optional) ----

/// `int32_t __tgt_rtl_init_plugin(void)`: called once, right after the
/// library is opened and before any other entry except `register_destruction_cb`.
pub type InitPluginFn = unsafe extern "C" fn() -> i32;
/// `int32_t __tgt_rtl_deinit_plugin(void)`: called once, last, after every
/// device was deinitialised; the plugin releases everything it holds.
pub type DeinitPluginFn = unsafe extern "C" fn() -> i32;
/// `int32_t __tgt_rtl_deinit_device(int32_t ID)`: release a device that
/// `init_device` set up, after all its memory was freed and images unloaded.
pub type DeinitDeviceFn = unsafe extern "C" fn(device: i32) -> i32;
/// `int32_t __tgt_rtl_unload_binary(int32_t ID, __tgt_device_image *Image)`:
/// unload an image that `load_binary` loaded on that device; its target table
/// is invalid afterwards.
pub type UnloadBinaryFn = unsafe extern "C" fn(device: i32, image: *mut DeviceImage) -> i32;
/// The callback a plugin calls when it is destroyed before `deinit_plugin`.
pub type DestructionCallback = unsafe extern "C" fn(data: *mut c_void);
/// `void __tgt_rtl_register_destruction_cb(void (*)(void *), void *)`.
pub type RegisterDestructionCbFn =
    unsafe extern "C" fn(callback: Option<DestructionCallback>, data: *mut c_void);

/// Symbol names of every entry, so loader and plugins spell them once.
pub mod names {
    pub const NUMBER_OF_DEVICES: &str = "__tgt_rtl_number_of_devices";
    pub const IS_VALID_BINARY: &str = "__tgt_rtl_is_valid_binary";
    pub const INIT_DEVICE: &str = "__tgt_rtl_init_device";
    pub const LOAD_BINARY: &str = "__tgt_rtl_load_binary";
    pub const DATA_ALLOC: &str = "__tgt_rtl_data_alloc";
    pub const DATA_SUBMIT: &str = "__tgt_rtl_data_submit";
    pub const DATA_RETRIEVE: &str = "__tgt_rtl_data_retrieve";
    pub const DATA_DELETE: &str = "__tgt_rtl_data_delete";
    pub const RUN_TARGET_REGION: &str = "__tgt_rtl_run_target_region";
    pub const RUN_TARGET_TEAM_REGION: &str = "__tgt_rtl_run_target_team_region";

    pub const IS_DATA_EXCHANGABLE: &str = "__tgt_rtl_is_data_exchangable";
    pub const SUPPORTS_EMPTY_IMAGES: &str = "__tgt_rtl_supports_empty_images";
    pub const INIT_REQUIRES: &str = "__tgt_rtl_init_requires";
    pub const DATA_SUBMIT_ASYNC: &str = "__tgt_rtl_data_submit_async";
    pub const DATA_RETRIEVE_ASYNC: &str = "__tgt_rtl_data_retrieve_async";
    pub const DATA_EXCHANGE: &str = "__tgt_rtl_data_exchange";
    pub const DATA_EXCHANGE_ASYNC: &str = "__tgt_rtl_data_exchange_async";
    pub const RUN_TARGET_REGION_ASYNC: &str = "__tgt_rtl_run_target_region_async";
    pub const RUN_TARGET_TEAM_REGION_ASYNC: &str = "__tgt_rtl_run_target_team_region_async";
    pub const SYNCHRONIZE: &str = "__tgt_rtl_synchronize";
    pub const SET_INFO_FLAG: &str = "__tgt_rtl_set_info_flag";
    pub const PRINT_DEVICE_INFO: &str = "__tgt_rtl_print_device_info";
    pub const CREATE_EVENT: &str = "__tgt_rtl_create_event";
    pub const RECORD_EVENT: &str = "__tgt_rtl_record_event";
    pub const WAIT_EVENT: &str = "__tgt_rtl_wait_event";
    pub const SYNC_EVENT: &str = "__tgt_rtl_sync_event";
    pub const DESTROY_EVENT: &str = "__tgt_rtl_destroy_event";
    pub const INIT_ASYNC_INFO: &str = "__tgt_rtl_init_async_info";
    pub const INIT_DEVICE_INFO: &str = "__tgt_rtl_init_device_info";

    pub const INIT_PLUGIN: &str = "__tgt_rtl_init_plugin";
    pub const DEINIT_PLUGIN: &str = "__tgt_rtl_deinit_plugin";
    pub const DEINIT_DEVICE: &str = "__tgt_rtl_deinit_device";
    pub const UNLOAD_BINARY: &str = "__tgt_rtl_unload_binary";
    pub const REGISTER_DESTRUCTION_CB: &str = "__tgt_rtl_register_destruction_cb";

    /// Entries every plugin must export; a plugin lacking one is skipped.
    pub const REQUIRED: [&str; 10] = [
        NUMBER_OF_DEVICES,
        IS_VALID_BINARY,
        INIT_DEVICE,
        LOAD_BINARY,
        DATA_ALLOC,
        DATA_SUBMIT,
        DATA_RETRIEVE,
        DATA_DELETE,
        RUN_TARGET_REGION,
        RUN_TARGET_TEAM_REGION,
    ];
}
