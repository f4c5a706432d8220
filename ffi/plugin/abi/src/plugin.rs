//! The plugin ABI: the `__tgt_rtl_*` entry points a plugin library exports.
//!
//! The required and optional entries are those of LLVM 14's plugins
//! (`omptargetplugin.h`). The lifecycle entries at the end are this
//! project's: all optional, so that LLVM's own plugins still load. The
//! repository's `docs/plugins.md` (the plugin contract) says who calls what, in which order, and what a
//! plugin may assume.

use crate::{AsyncInfo, DeviceImage, DeviceInfo, TargetTable};
use core::ffi::{c_char, c_void};

pub mod calls;
pub use calls::{OptionalEntry, PluginCalls};

// ---- required (LLVM 14) ----
/// `__tgt_rtl_number_of_devices`: how many devices the plugin drives.
pub type NumberOfDevicesFn = unsafe extern "C" fn() -> i32;
/// `__tgt_rtl_is_valid_binary`: nonzero if the plugin can run this image.
pub type IsValidBinaryFn = unsafe extern "C" fn(image: *mut DeviceImage) -> i32;
/// `__tgt_rtl_init_device`: prepare device `device` for use.
pub type InitDeviceFn = unsafe extern "C" fn(device: i32) -> i32;
/// `__tgt_rtl_load_binary`: load an image on a device; its target table, or null.
pub type LoadBinaryFn =
    unsafe extern "C" fn(device: i32, image: *mut DeviceImage) -> *mut TargetTable;
/// `__tgt_rtl_data_alloc`: allocate `size` bytes of `kind` memory on a device.
pub type DataAllocFn =
    unsafe extern "C" fn(device: i32, size: i64, host_ptr: *mut c_void, kind: i32) -> *mut c_void;
/// `__tgt_rtl_data_submit`: copy `size` bytes host -> device.
pub type DataSubmitFn = unsafe extern "C" fn(
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
) -> i32;
/// `__tgt_rtl_data_retrieve`: copy `size` bytes device -> host.
pub type DataRetrieveFn = unsafe extern "C" fn(
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
) -> i32;
/// `__tgt_rtl_data_delete`: free memory that `data_alloc` returned.
pub type DataDeleteFn = unsafe extern "C" fn(device: i32, tgt_ptr: *mut c_void) -> i32;
/// `__tgt_rtl_run_target_region`: run a kernel with one team.
pub type RunTargetRegionFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
) -> i32;
/// `__tgt_rtl_run_target_team_region`: run a kernel with teams.
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
/// `__tgt_rtl_is_data_exchangable`: nonzero if two devices can copy directly.
pub type IsDataExchangableFn = unsafe extern "C" fn(src_device: i32, dst_device: i32) -> i32;
/// `__tgt_rtl_supports_empty_images`: nonzero if images without entries are loaded.
pub type SupportsEmptyImagesFn = unsafe extern "C" fn() -> i32;
/// `__tgt_rtl_init_requires`: pass the `requires` flags; returns those accepted.
pub type InitRequiresFn = unsafe extern "C" fn(requires_flags: i64) -> i64;
/// `__tgt_rtl_data_submit_async`: enqueue a host -> device copy.
pub type DataSubmitAsyncFn = unsafe extern "C" fn(
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
/// `__tgt_rtl_data_retrieve_async`: enqueue a device -> host copy.
pub type DataRetrieveAsyncFn = unsafe extern "C" fn(
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
/// `__tgt_rtl_data_exchange`: copy device -> device.
pub type DataExchangeFn = unsafe extern "C" fn(
    src_device: i32,
    src_ptr: *mut c_void,
    dst_device: i32,
    dst_ptr: *mut c_void,
    size: i64,
) -> i32;
/// `__tgt_rtl_data_exchange_async`: enqueue a device -> device copy.
pub type DataExchangeAsyncFn = unsafe extern "C" fn(
    src_device: i32,
    src_ptr: *mut c_void,
    dst_device: i32,
    dst_ptr: *mut c_void,
    size: i64,
    async_info: *mut AsyncInfo,
) -> i32;
/// `__tgt_rtl_run_target_region_async`: enqueue a one-team kernel launch.
pub type RunTargetRegionAsyncFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
    async_info: *mut AsyncInfo,
) -> i32;
/// `__tgt_rtl_run_target_team_region_async`: enqueue a kernel launch with teams.
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
/// `__tgt_rtl_synchronize`: wait for a queue to drain, then release it.
pub type SynchronizeFn = unsafe extern "C" fn(device: i32, async_info: *mut AsyncInfo) -> i32;
/// `__tgt_rtl_set_info_flag`: set the plugin's `LIBOMPTARGET_INFO` bits.
pub type SetInfoFlagFn = unsafe extern "C" fn(flags: u32);
/// `__tgt_rtl_print_device_info`: print a device's properties to stdout.
pub type PrintDeviceInfoFn = unsafe extern "C" fn(device: i32);
/// `__tgt_rtl_create_event`: create an event on a device.
pub type CreateEventFn = unsafe extern "C" fn(device: i32, event: *mut *mut c_void) -> i32;
/// `__tgt_rtl_record_event`: record an event on a queue.
pub type RecordEventFn =
    unsafe extern "C" fn(device: i32, event: *mut c_void, async_info: *mut AsyncInfo) -> i32;
/// `__tgt_rtl_wait_event`: make a queue wait for an event.
pub type WaitEventFn =
    unsafe extern "C" fn(device: i32, event: *mut c_void, async_info: *mut AsyncInfo) -> i32;
/// `__tgt_rtl_sync_event`: block until an event completes.
pub type SyncEventFn = unsafe extern "C" fn(device: i32, event: *mut c_void) -> i32;
/// `__tgt_rtl_destroy_event`: destroy an event.
pub type DestroyEventFn = unsafe extern "C" fn(device: i32, event: *mut c_void) -> i32;
/// `__tgt_rtl_event_elapsed_time` (this project's, optional): the time
/// between two completed events of a device, in milliseconds, in `*ms`.
pub type EventElapsedTimeFn =
    unsafe extern "C" fn(device: i32, start: *mut c_void, end: *mut c_void, ms: *mut f32) -> i32;
/// `__tgt_rtl_init_async_info`: create a queue for a device.
pub type InitAsyncInfoFn =
    unsafe extern "C" fn(device: i32, async_info: *mut *mut AsyncInfo) -> i32;
/// `__tgt_rtl_init_device_info`: fill in a device's native handles.
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

/// `size_t __tgt_rtl_last_error_message(char *Buf, size_t Cap)`: the
/// message of the calling thread's last failed entry of this plugin (why
/// `load_binary` returned null, why a copy failed ...). Copies at most
/// `Cap` bytes of it into `Buf` (no NUL added) and returns its full length,
/// 0 when there is none; the message is then forgotten, so a later failure
/// without a message never shows a stale one.
pub type LastErrorFn = unsafe extern "C" fn(buf: *mut c_char, cap: usize) -> usize;

/// `int32_t __tgt_rtl_data_delete_batch(int32_t ID, void **Ptrs, int64_t N)`
/// (this project's entry, optional: without it the runtime calls
/// `data_delete` once per block): free the `N` blocks `Ptrs[0..N]`, each
/// as `data_delete` would. Every slot whose block was freed is set to
/// null; a slot left as it was holds a block that was not freed (not
/// allocated on this device, freed already, a duplicate within the batch,
/// or a null entry). Returns `OFFLOAD_SUCCESS` when all `N` were freed,
/// `OFFLOAD_FAIL` otherwise (then `__tgt_rtl_last_error_message` says
/// why). `N == 0` succeeds and reads nothing; a null `Ptrs` with `N > 0`,
/// a negative `N`, or a device that is out of range or not initialised
/// fail with every slot untouched.
pub type DataDeleteBatchFn =
    unsafe extern "C" fn(device: i32, ptrs: *mut *mut c_void, n: i64) -> i32;

/// `__tgt_target_table *__tgt_rtl_load_binary_flags(int32_t ID,
/// __tgt_device_image *Image, uint32_t Flags)` (this project's entry,
/// optional): `load_binary` with the [`load_flags`] `Flags`. `Flags == 0`
/// is exactly `load_binary`. A flag the plugin does not know fails the
/// load (null; `__tgt_rtl_last_error_message` names it), so a caller never
/// gets a weaker load than it asked for. The image is unloaded with
/// `unload_binary`, as any other.
pub type LoadBinaryFlagsFn =
    unsafe extern "C" fn(device: i32, image: *mut DeviceImage, flags: u32) -> *mut TargetTable;

/// `int32_t __tgt_rtl_is_device_compatible(int32_t ID, __tgt_device_image
/// *Image)` (this project's entry, optional; LLVM 20+'s
/// `isDeviceCompatible` as a C entry): 1 when device `ID` can run `Image`,
/// which `is_valid_binary` already accepted for the plugin, 0 when it
/// cannot (or on failure, then `__tgt_rtl_last_error_message` says why).
/// The device need not be initialised. A runtime registers an image only
/// on the devices that can run it; without this entry, on every device of
/// a plugin that accepted it (LLVM 14's and 19's rule).
pub type IsDeviceCompatibleFn = unsafe extern "C" fn(device: i32, image: *mut DeviceImage) -> i32;

/// The flags of [`LoadBinaryFlagsFn`].
pub mod load_flags {
    /// Bind every symbol the image references while loading it, and refuse
    /// the image (null, with the loader's `undefined symbol: NAME` as the
    /// plugin's last error) when one cannot be bound. Without it a host
    /// plugin binds a function reference at its first call, as LLVM's do
    /// (`dlopen` with `RTLD_LAZY`), so an image calling a function that
    /// exists nowhere loads, and the call that first reaches the function
    /// ends the process (the loader's `symbol lookup error`, exit 127).
    /// A backend whose loader binds everything anyway (CUDA's
    /// `cuModuleLoadData`) accepts it as is.
    pub const BIND_NOW: u32 = 1;
    /// Every flag defined.
    pub const ALL: u32 = BIND_NOW;
}

/// How one kernel argument slot of [`RunTypedRegionFn`] is passed. The slot
/// is pointer-sized; narrower values sit in its low bytes (integers
/// sign- or zero-extended, floats as their bit pattern).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelArgType {
    /// A pointer-sized integer or pointer: LLVM's only kind of argument.
    Pointer = 0,
    /// C `float`.
    F32 = 1,
    /// C `double`.
    F64 = 2,
    /// C `int8_t`.
    I8 = 3,
    /// C `uint8_t`.
    U8 = 4,
    /// C `int16_t`.
    I16 = 5,
    /// C `uint16_t`.
    U16 = 6,
    /// C `int32_t`.
    I32 = 7,
    /// C `uint32_t`.
    U32 = 8,
    /// C `int64_t`.
    I64 = 9,
    /// C `uint64_t`.
    U64 = 10,
}

impl KernelArgType {
    /// The type of code `code`, if it is one.
    pub fn from_code(code: u8) -> Option<Self> {
        use KernelArgType::*;
        Some(match code {
            0 => Pointer,
            1 => F32,
            2 => F64,
            3 => I8,
            4 => U8,
            5 => I16,
            6 => U16,
            7 => I32,
            8 => U32,
            9 => I64,
            10 => U64,
            _ => return None,
        })
    }
}

/// `int32_t __tgt_rtl_run_typed_region(int32_t ID, void *Entry, void
/// **Args, ptrdiff_t *Offsets, const uint8_t *ArgTypes, int32_t NumArgs,
/// int32_t NumTeams, int32_t ThreadLimit, uint64_t TripCount,
/// __tgt_async_info *AsyncInfo)`: like `run_target_team_region_async`, with
/// the C type of every argument (`ArgTypes[i]`, a [`KernelArgType`] code),
/// for kernels that are plain C functions rather than clang's outlined
/// regions (whose parameters are all pointer-sized). `NumTeams < 0` runs a
/// region without teams. `AsyncInfo` may be null: then the call completes
/// before returning.
pub type RunTypedRegionFn = unsafe extern "C-unwind" fn(
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    arg_types: *const u8,
    num_args: i32,
    num_teams: i32,
    thread_limit: i32,
    loop_tripcount: u64,
    async_info: *mut AsyncInfo,
) -> i32;

/// `int32_t __tgt_rtl_get_device_info(int32_t ID, int32_t Key, void *Value,
/// size_t Cap, size_t *Size)` (this project's entry, optional): one
/// property of a device, for the Rust API's `Device::properties`. LLVM's
/// C plugin ABI has no such query: LLVM 22 keeps device information inside
/// its plugins (`GenericDeviceTy::obtainInfo`, an `InfoTreeNode` that
/// `__tgt_rtl_print_device_info` prints and liboffload's `olGetDeviceInfo`
/// reads); this entry has the shape of `olGetDeviceInfo`.
///
/// `Key` is a [`DeviceInfoKey`] code. A property the plugin knows is
/// written to `Value` when it fits (`Cap >= *Size`; nothing is written
/// otherwise, so a caller asks again with room for `*Size` bytes), and
/// `*Size` is set to its full size: a number is 8 bytes (`uint64_t`, native
/// byte order), a text is UTF-8 without a terminating NUL. A property the
/// plugin does not know (for this device, or a key newer than the plugin)
/// is `*Size == 0` and `OFFLOAD_SUCCESS`: not knowing is no failure.
/// `Value` may be null when `Cap` is 0 (a size query). Works on any device
/// in range, initialised or not (a plugin may know more once it is:
/// CUDA's free memory needs the device's context). `OFFLOAD_FAIL` for a
/// device out of range, a null `Size`, a null `Value` with `Cap > 0`, or a
/// property the plugin should know but could not read (a driver call
/// failed); `__tgt_rtl_last_error_message` says why.
pub type GetDeviceInfoFn = unsafe extern "C" fn(
    device: i32,
    key: i32,
    value: *mut c_void,
    cap: usize,
    size: *mut usize,
) -> i32;

/// The properties [`GetDeviceInfoFn`] asks for (its `Key`).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceInfoKey {
    /// Text: the device's name (a CPU's model name, a GPU's product name).
    Name = 1,
    /// Number: what kind of device it is, a [`device_kind`] code.
    Kind = 2,
    /// Number: bytes of memory the device has in all.
    TotalMemory = 3,
    /// Number: bytes of that memory free now.
    FreeMemory = 4,
    /// Number: the most teams one launch of a typed kernel runs
    /// (`__tgt_rtl_run_typed_region`'s `NumTeams`; CUDA's grid).
    MaxTeams = 5,
    /// Number: the most threads per team one launch of a typed kernel
    /// runs (`ThreadLimit`; CUDA's block).
    MaxThreads = 6,
    /// Text: where the device is, for a device outside this process (a
    /// remote device: "rank 1 on node7"). A local device has none.
    Location = 7,
}

impl DeviceInfoKey {
    /// Every key, in code order.
    pub const ALL: [DeviceInfoKey; 7] = [
        DeviceInfoKey::Name,
        DeviceInfoKey::Kind,
        DeviceInfoKey::TotalMemory,
        DeviceInfoKey::FreeMemory,
        DeviceInfoKey::MaxTeams,
        DeviceInfoKey::MaxThreads,
        DeviceInfoKey::Location,
    ];

    /// The key of code `raw`, if it is one.
    pub fn from_raw(raw: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as i32 == raw)
    }

    /// Whether the property is a text (else a number).
    pub fn is_text(self) -> bool {
        matches!(self, DeviceInfoKey::Name | DeviceInfoKey::Location)
    }
}

/// The codes of [`DeviceInfoKey::Kind`].
pub mod device_kind {
    /// The host's CPU, running kernels in the calling process.
    pub const HOST_CPU: u64 = 1;
    /// An NVIDIA GPU, driven through CUDA.
    pub const CUDA_GPU: u64 = 2;
}

/// Every entry of one plugin, resolved: required ones as plain fn
/// pointers, optional ones as `Option`.
///
/// The runtime fills one in from a plugin library's symbols (see
/// [`names`]); a plugin built into the runtime (the plugin kit's
/// `builtin` tables) provides one directly, so both are driven through the
/// same table. Valid only while the plugin's code stays loaded.
#[derive(Clone, Copy)]
#[allow(missing_docs)] // each field is the entry of the type it holds
pub struct EntryTable {
    pub number_of_devices: NumberOfDevicesFn,
    pub is_valid_binary: IsValidBinaryFn,
    pub init_device: InitDeviceFn,
    pub load_binary: LoadBinaryFn,
    pub data_alloc: DataAllocFn,
    pub data_submit: DataSubmitFn,
    pub data_retrieve: DataRetrieveFn,
    pub data_delete: DataDeleteFn,
    pub run_target_region: RunTargetRegionFn,
    pub run_target_team_region: RunTargetTeamRegionFn,

    pub is_data_exchangable: Option<IsDataExchangableFn>,
    pub supports_empty_images: Option<SupportsEmptyImagesFn>,
    pub init_requires: Option<InitRequiresFn>,
    pub data_submit_async: Option<DataSubmitAsyncFn>,
    pub data_retrieve_async: Option<DataRetrieveAsyncFn>,
    pub data_exchange: Option<DataExchangeFn>,
    pub data_exchange_async: Option<DataExchangeAsyncFn>,
    pub run_target_region_async: Option<RunTargetRegionAsyncFn>,
    pub run_target_team_region_async: Option<RunTargetTeamRegionAsyncFn>,
    pub synchronize: Option<SynchronizeFn>,
    pub set_info_flag: Option<SetInfoFlagFn>,
    pub print_device_info: Option<PrintDeviceInfoFn>,
    pub create_event: Option<CreateEventFn>,
    pub record_event: Option<RecordEventFn>,
    pub wait_event: Option<WaitEventFn>,
    pub sync_event: Option<SyncEventFn>,
    pub destroy_event: Option<DestroyEventFn>,
    pub init_async_info: Option<InitAsyncInfoFn>,
    pub init_device_info: Option<InitDeviceInfoFn>,

    pub init_plugin: Option<InitPluginFn>,
    pub deinit_plugin: Option<DeinitPluginFn>,
    pub deinit_device: Option<DeinitDeviceFn>,
    pub unload_binary: Option<UnloadBinaryFn>,
    pub register_destruction_cb: Option<RegisterDestructionCbFn>,
    pub last_error: Option<LastErrorFn>,
    pub run_typed_region: Option<RunTypedRegionFn>,
    pub data_delete_batch: Option<DataDeleteBatchFn>,
    pub load_binary_flags: Option<LoadBinaryFlagsFn>,
    pub is_device_compatible: Option<IsDeviceCompatibleFn>,
    pub event_elapsed_time: Option<EventElapsedTimeFn>,
    pub get_device_info: Option<GetDeviceInfoFn>,
}

/// Symbol names of every entry, so loader and plugins spell them once.
pub mod names {
    /// The symbol of [`super::NumberOfDevicesFn`].
    pub const NUMBER_OF_DEVICES: &str = "__tgt_rtl_number_of_devices";
    /// The symbol of [`super::IsValidBinaryFn`].
    pub const IS_VALID_BINARY: &str = "__tgt_rtl_is_valid_binary";
    /// The symbol of [`super::InitDeviceFn`].
    pub const INIT_DEVICE: &str = "__tgt_rtl_init_device";
    /// The symbol of [`super::LoadBinaryFn`].
    pub const LOAD_BINARY: &str = "__tgt_rtl_load_binary";
    /// The symbol of [`super::DataAllocFn`].
    pub const DATA_ALLOC: &str = "__tgt_rtl_data_alloc";
    /// The symbol of [`super::DataSubmitFn`].
    pub const DATA_SUBMIT: &str = "__tgt_rtl_data_submit";
    /// The symbol of [`super::DataRetrieveFn`].
    pub const DATA_RETRIEVE: &str = "__tgt_rtl_data_retrieve";
    /// The symbol of [`super::DataDeleteFn`].
    pub const DATA_DELETE: &str = "__tgt_rtl_data_delete";
    /// The symbol of [`super::RunTargetRegionFn`].
    pub const RUN_TARGET_REGION: &str = "__tgt_rtl_run_target_region";
    /// The symbol of [`super::RunTargetTeamRegionFn`].
    pub const RUN_TARGET_TEAM_REGION: &str = "__tgt_rtl_run_target_team_region";

    /// The symbol of [`super::IsDataExchangableFn`].
    pub const IS_DATA_EXCHANGABLE: &str = "__tgt_rtl_is_data_exchangable";
    /// The symbol of [`super::SupportsEmptyImagesFn`].
    pub const SUPPORTS_EMPTY_IMAGES: &str = "__tgt_rtl_supports_empty_images";
    /// The symbol of [`super::InitRequiresFn`].
    pub const INIT_REQUIRES: &str = "__tgt_rtl_init_requires";
    /// The symbol of [`super::DataSubmitAsyncFn`].
    pub const DATA_SUBMIT_ASYNC: &str = "__tgt_rtl_data_submit_async";
    /// The symbol of [`super::DataRetrieveAsyncFn`].
    pub const DATA_RETRIEVE_ASYNC: &str = "__tgt_rtl_data_retrieve_async";
    /// The symbol of [`super::DataExchangeFn`].
    pub const DATA_EXCHANGE: &str = "__tgt_rtl_data_exchange";
    /// The symbol of [`super::DataExchangeAsyncFn`].
    pub const DATA_EXCHANGE_ASYNC: &str = "__tgt_rtl_data_exchange_async";
    /// The symbol of [`super::RunTargetRegionAsyncFn`].
    pub const RUN_TARGET_REGION_ASYNC: &str = "__tgt_rtl_run_target_region_async";
    /// The symbol of [`super::RunTargetTeamRegionAsyncFn`].
    pub const RUN_TARGET_TEAM_REGION_ASYNC: &str = "__tgt_rtl_run_target_team_region_async";
    /// The symbol of [`super::SynchronizeFn`].
    pub const SYNCHRONIZE: &str = "__tgt_rtl_synchronize";
    /// The symbol of [`super::SetInfoFlagFn`].
    pub const SET_INFO_FLAG: &str = "__tgt_rtl_set_info_flag";
    /// The symbol of [`super::PrintDeviceInfoFn`].
    pub const PRINT_DEVICE_INFO: &str = "__tgt_rtl_print_device_info";
    /// The symbol of [`super::CreateEventFn`].
    pub const CREATE_EVENT: &str = "__tgt_rtl_create_event";
    /// The symbol of [`super::RecordEventFn`].
    pub const RECORD_EVENT: &str = "__tgt_rtl_record_event";
    /// The symbol of [`super::WaitEventFn`].
    pub const WAIT_EVENT: &str = "__tgt_rtl_wait_event";
    /// The symbol of [`super::SyncEventFn`].
    pub const SYNC_EVENT: &str = "__tgt_rtl_sync_event";
    /// The symbol of [`super::DestroyEventFn`].
    pub const DESTROY_EVENT: &str = "__tgt_rtl_destroy_event";
    /// The symbol of [`super::EventElapsedTimeFn`].
    pub const EVENT_ELAPSED_TIME: &str = "__tgt_rtl_event_elapsed_time";
    /// The symbol of [`super::InitAsyncInfoFn`].
    pub const INIT_ASYNC_INFO: &str = "__tgt_rtl_init_async_info";
    /// The symbol of [`super::InitDeviceInfoFn`].
    pub const INIT_DEVICE_INFO: &str = "__tgt_rtl_init_device_info";

    /// The symbol of [`super::InitPluginFn`].
    pub const INIT_PLUGIN: &str = "__tgt_rtl_init_plugin";
    /// The symbol of [`super::DeinitPluginFn`].
    pub const DEINIT_PLUGIN: &str = "__tgt_rtl_deinit_plugin";
    /// The symbol of [`super::DeinitDeviceFn`].
    pub const DEINIT_DEVICE: &str = "__tgt_rtl_deinit_device";
    /// The symbol of [`super::UnloadBinaryFn`].
    pub const UNLOAD_BINARY: &str = "__tgt_rtl_unload_binary";
    /// The symbol of [`super::RegisterDestructionCbFn`].
    pub const REGISTER_DESTRUCTION_CB: &str = "__tgt_rtl_register_destruction_cb";
    /// The symbol of [`super::LastErrorFn`].
    pub const LAST_ERROR_MESSAGE: &str = "__tgt_rtl_last_error_message";
    /// The symbol of [`super::RunTypedRegionFn`].
    pub const RUN_TYPED_REGION: &str = "__tgt_rtl_run_typed_region";
    /// The symbol of [`super::DataDeleteBatchFn`].
    pub const DATA_DELETE_BATCH: &str = "__tgt_rtl_data_delete_batch";
    /// The symbol of [`super::LoadBinaryFlagsFn`].
    pub const LOAD_BINARY_FLAGS: &str = "__tgt_rtl_load_binary_flags";
    /// The symbol of [`super::IsDeviceCompatibleFn`].
    pub const IS_DEVICE_COMPATIBLE: &str = "__tgt_rtl_is_device_compatible";
    /// The symbol of [`super::GetDeviceInfoFn`].
    pub const GET_DEVICE_INFO: &str = "__tgt_rtl_get_device_info";

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
