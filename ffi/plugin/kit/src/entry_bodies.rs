//! The body of every C entry, generic over the backend.
//!
//! [`crate::export_plugin!`] exports thin `#[no_mangle] extern "C"` wrappers
//! around these functions. Each one:
//! 1. reports the call to [`Backend::on_entry`];
//! 2. runs inside a panic boundary ([`std::panic::catch_unwind`]): nothing
//!    unwinds into C; a panic is reported and becomes a failure (an
//!    exported C entry's, [`crate::boundary::CEntry`]; a built-in plugin's
//!    native call has none: its panic unwinds to its Rust caller,
//!    [`crate::boundary::Native`]);
//! 3. checks its arguments (device id range and init state, null pointers,
//!    negative sizes, unknown allocation kinds), reporting a clear message
//!    on stderr;
//! 4. initialises the plugin lazily if no `init_plugin` came first;
//! 5. calls the backend and turns the `Result` into the C return value:
//!    `OFFLOAD_SUCCESS`/`OFFLOAD_FAIL`, a pointer/null, or a count/0.
//!
//! The copy and launch bodies take `async_info: Option<*mut AsyncInfo>`:
//! `None` for the blocking entry, `Some` for its `_async` variant. Either
//! way the backend's one method for the operation runs on a queue of its
//! own type, which the `queue` module makes from the `__tgt_async_info` (or, for a
//! blocking entry, locally, and synchronises before returning).
//!
//! # Safety (all functions)
//! The pointer arguments are what the `__tgt_rtl_*` ABI says they are:
//! each non-null pointer is valid for the access the entry makes (an image
//! descriptor and the memory it describes, `num_args` arguments and offsets,
//! `size` bytes of host memory). Null pointers are detected and rejected.

use crate::backend::{Backend, DeviceInfoValue, EntryCall, ImageRef, LoadOptions, TeamConfig};
use crate::boundary::Boundary;
use crate::cell::PluginCell;
use crate::diagnostics;
use crate::error::{PluginError, Result};
use omptarget_abi::plugin::{names, DestructionCallback, DeviceInfoKey, KernelArgType};
use omptarget_abi::{
    AllocKind, AsyncInfo, DeviceImage, OffloadEntry, TargetTable, OFFLOAD_FAIL, OFFLOAD_SUCCESS,
};
use std::any::Any;
use std::ffi::c_void;
use std::panic::catch_unwind;
use std::ptr::{self, NonNull};

mod launch;
mod queue;
pub use launch::{run_region, run_typed_region};
pub use queue::queue_entry;

/// Kernel argument values [`run_region`] keeps on the stack: a launch with
/// up to this many arguments allocates nothing in the entry layer, and a
/// backend can size its own per-launch arrays by it (the host backend's
/// libffi arrays do), so a common launch allocates nothing on the way.
pub const INLINE_ARGS: usize = 16;

/// Run `f` behind `K`'s boundary (a C entry's panic boundary, or none for
/// a native call: [`crate::boundary`]); report an error or a caught panic
/// and return `on_error` instead. The failure's message is also kept for
/// `__tgt_rtl_last_error_message` ([`last_error`]).
fn guard<B: Backend, K: Boundary, T, const LAUNCH: bool>(
    entry: &str,
    on_error: T,
    f: impl FnOnce() -> Result<T>,
) -> T {
    // A message is about this call only: never a stale one from before.
    crate::last_error::clear();
    let outcome = if LAUNCH { K::run_launch(f) } else { K::run(f) };
    // Formatting runs the error's Display: behind the boundary too.
    let _ = K::run(|| match &outcome {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => crate::last_error::set(&format_args!("{entry}: {error}")),
        Err(payload) => crate::last_error::set(&format_args!(
            "{entry}: panic: {}",
            panic_message(payload.as_ref())
        )),
    });
    match outcome {
        Ok(Ok(value)) => value,
        // An image the backend cannot load is reported by the runtime
        // ("Unable to generate entries table ..."), as with LLVM's plugins;
        // the backend's reason is debug detail. Every other failure is
        // printed: the runtime sees only the failure code.
        Ok(Err(
            error @ (crate::error::PluginError::InvalidImage(_)
            | crate::error::PluginError::OutOfMemory(_)),
        )) => {
            diagnostics::debug(B::NAME, &format_args!("error in {entry}: {error}"));
            on_error
        }
        Ok(Err(error)) => {
            diagnostics::error(B::NAME, entry, &error);
            on_error
        }
        Err(payload) => {
            diagnostics::error(
                B::NAME,
                entry,
                &format_args!("panic: {}", panic_message(payload.as_ref())),
            );
            on_error
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(non-string panic payload)"
    }
}

/// Map a unit result to `OFFLOAD_SUCCESS` (errors become `OFFLOAD_FAIL` in
/// [`guard`]).
fn status<B: Backend, K: Boundary>(entry: &str, f: impl FnOnce() -> Result<()>) -> i32 {
    guard::<B, K, i32, false>(entry, OFFLOAD_FAIL, || f().map(|()| OFFLOAD_SUCCESS))
}

/// [`status`] for a launch entry ([`Boundary::run_launch`]).
fn launch_status<B: Backend, K: Boundary>(entry: &str, f: impl FnOnce() -> Result<()>) -> i32 {
    guard::<B, K, i32, true>(entry, OFFLOAD_FAIL, || f().map(|()| OFFLOAD_SUCCESS))
}

fn observe<B: Backend>(call: EntryCall) {
    diagnostics::debug(B::NAME, &call);
    B::on_entry(&call);
}

/// A size argument as `usize`; negative sizes are an error.
fn size_arg(name: &str, size: i64) -> Result<usize> {
    usize::try_from(size)
        .map_err(|_| PluginError::InvalidArgument(format!("`{name}` is negative ({size})")))
}

fn non_null<T>(name: &'static str, p: *mut T) -> Result<NonNull<T>> {
    NonNull::new(p).ok_or(PluginError::NullPointer(name))
}

/// Check an image descriptor and borrow what it describes.
///
/// # Safety
/// A non-null `image` points to a `__tgt_device_image` whose byte range and
/// entry range stay valid and unmodified for `'a`.
unsafe fn image_ref<'a>(image: *mut DeviceImage) -> Result<ImageRef<'a>> {
    let desc = non_null("image", image)?;
    // SAFETY: non-null, and per this function's contract a valid
    // `__tgt_device_image`.
    let d = unsafe { desc.as_ptr().read() };
    let start = non_null("image->ImageStart", d.image_start)?;
    let len = d
        .len()
        .ok_or_else(|| PluginError::InvalidImage("ImageEnd is below ImageStart".to_string()))?;
    // SAFETY: per the contract, `ImageStart..ImageEnd` (len bytes, checked
    // non-negative above) stays valid and unmodified for 'a.
    let bytes = unsafe { std::slice::from_raw_parts(start.as_ptr().cast::<u8>(), len) };
    let entries = match (d.entries_begin.is_null(), d.entries_end.is_null()) {
        (true, true) => &[][..],
        (false, false) => {
            let span = (d.entries_end as usize)
                .checked_sub(d.entries_begin as usize)
                .ok_or_else(|| {
                    PluginError::InvalidImage("EntriesEnd is below EntriesBegin".to_string())
                })?;
            let size = std::mem::size_of::<OffloadEntry>();
            if span % size != 0
                || !(d.entries_begin as usize).is_multiple_of(std::mem::align_of::<OffloadEntry>())
            {
                return Err(PluginError::InvalidImage(format!(
                    "the entry table ({span} bytes at {:p}) is not an aligned array of {size}-byte entries",
                    d.entries_begin
                )));
            }
            // SAFETY: non-null, aligned and a whole number of entries
            // (checked above); valid for 'a per the contract.
            unsafe { std::slice::from_raw_parts(d.entries_begin, span / size) }
        }
        _ => {
            return Err(PluginError::InvalidImage(
                "exactly one of EntriesBegin/EntriesEnd is null".to_string(),
            ))
        }
    };
    Ok(ImageRef {
        desc,
        bytes,
        entries,
    })
}

/// `__tgt_rtl_init_plugin`.
pub fn init_plugin<B: Backend, K: Boundary>(cell: &PluginCell<B, K>) -> i32 {
    status::<B, K>(names::INIT_PLUGIN, || {
        observe::<B>(EntryCall::InitPlugin);
        cell.init_explicit()
    })
}

/// `__tgt_rtl_deinit_plugin`: `OFFLOAD_IN_USE` (not `OFFLOAD_FAIL`) when
/// calls stayed inside the plugin, so that our runtime keeps the library.
pub fn deinit_plugin<B: Backend, K: Boundary>(cell: &PluginCell<B, K>) -> i32 {
    let mut in_use = false;
    let code = status::<B, K>(names::DEINIT_PLUGIN, || {
        observe::<B>(EntryCall::DeinitPlugin);
        let outcome = cell.deinit();
        in_use = matches!(outcome, Err(PluginError::InUse { .. }));
        outcome
    });
    if in_use {
        omptarget_abi::OFFLOAD_IN_USE
    } else {
        code
    }
}

/// `__tgt_rtl_number_of_devices`; 0 on failure.
pub fn number_of_devices<B: Backend, K: Boundary>(cell: &PluginCell<B, K>) -> i32 {
    guard::<B, K, i32, false>(names::NUMBER_OF_DEVICES, 0, || {
        observe::<B>(EntryCall::NumberOfDevices);
        cell.with_live(|live| Ok(live.reported_device_count()))
    })
}

/// `__tgt_rtl_is_valid_binary`; 0 on failure.
///
/// # Safety
/// See the module docs.
pub unsafe fn is_valid_binary<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    image: *mut DeviceImage,
) -> i32 {
    guard::<B, K, i32, false>(names::IS_VALID_BINARY, 0, || {
        observe::<B>(EntryCall::IsValidBinary);
        // An image of no bytes at all (start and end null, as a descriptor
        // that carries only `requires` entries has) is simply not ours to
        // run: "no", without an error line, as LLVM's plugins answer.
        // SAFETY: the caller passes a valid `__tgt_device_image` or null
        // (module contract); read only when non-null.
        if let Some(d) = unsafe { image.as_ref() } {
            if d.image_start.is_null() && d.image_end.is_null() {
                return Ok(0);
            }
        }
        // SAFETY: the caller passes a valid `__tgt_device_image` (or null,
        // refused by image_ref), alive for this call (module contract).
        let image = unsafe { image_ref(image)? };
        cell.with_live(|live| Ok(i32::from(live.backend().is_valid_binary(&image))))
    })
}

/// `__tgt_rtl_is_device_compatible`; 0 on failure.
///
/// # Safety
/// See the module docs.
pub unsafe fn is_device_compatible<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    image: *mut DeviceImage,
) -> i32 {
    guard::<B, K, i32, false>(names::IS_DEVICE_COMPATIBLE, 0, || {
        observe::<B>(EntryCall::IsDeviceCompatible { device });
        // SAFETY: the caller passes a valid `__tgt_device_image` (or null,
        // refused by image_ref), alive for this call (module contract).
        let image = unsafe { image_ref(image)? };
        cell.with_live(|live| {
            let device = live.device(device)?;
            Ok(i32::from(
                live.backend().is_device_compatible(device, &image)?,
            ))
        })
    })
}

/// `__tgt_rtl_init_requires`; returns the accepted flags, 0 on failure.
pub fn init_requires<B: Backend, K: Boundary>(cell: &PluginCell<B, K>, flags: i64) -> i64 {
    guard::<B, K, i64, false>(names::INIT_REQUIRES, 0, || {
        observe::<B>(EntryCall::InitRequires { flags });
        cell.with_live(|live| Ok(live.backend().init_requires(flags)))
    })
}

/// `__tgt_rtl_init_device`.
pub fn init_device<B: Backend, K: Boundary>(cell: &PluginCell<B, K>, device: i32) -> i32 {
    status::<B, K>(names::INIT_DEVICE, || {
        observe::<B>(EntryCall::InitDevice { device });
        cell.with_live(|live| live.init_device(device))
    })
}

/// `__tgt_rtl_deinit_device`.
pub fn deinit_device<B: Backend, K: Boundary>(cell: &PluginCell<B, K>, device: i32) -> i32 {
    status::<B, K>(names::DEINIT_DEVICE, || {
        observe::<B>(EntryCall::DeinitDevice { device });
        cell.with_live(|live| live.deinit_device(device))
    })
}

/// `__tgt_rtl_load_binary`; null on failure.
///
/// # Safety
/// See the module docs.
pub unsafe fn load_binary<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    image: *mut DeviceImage,
) -> *mut TargetTable {
    guard::<B, K, *mut TargetTable, false>(names::LOAD_BINARY, ptr::null_mut(), || {
        observe::<B>(EntryCall::LoadBinary { device });
        // SAFETY: per this function's contract.
        unsafe { load_with(cell, device, image, LoadOptions::default()) }
    })
}

/// `__tgt_rtl_load_binary_flags`; null on failure, and for a flag this kit
/// does not know (before the image is looked at).
///
/// # Safety
/// See the module docs.
pub unsafe fn load_binary_flags<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    image: *mut DeviceImage,
    flags: u32,
) -> *mut TargetTable {
    guard::<B, K, *mut TargetTable, false>(names::LOAD_BINARY_FLAGS, ptr::null_mut(), || {
        observe::<B>(EntryCall::LoadBinary { device });
        let options = LoadOptions::from_flags(flags)?;
        // SAFETY: per this function's contract.
        unsafe { load_with(cell, device, image, options) }
    })
}

/// The body of both load entries.
///
/// # Safety
/// See the module docs.
unsafe fn load_with<B: Backend, K>(
    cell: &PluginCell<B, K>,
    device: i32,
    image: *mut DeviceImage,
    options: LoadOptions,
) -> Result<*mut TargetTable> {
    cell.with_live(|live| {
        let device = live.initialised_device(device)?;
        // SAFETY: a valid image descriptor, alive for this call (module
        // contract); the backend copies what it keeps.
        let image = unsafe { image_ref(image)? };
        live.backend()
            .load_binary(device, &image, options)
            .map(NonNull::as_ptr)
    })
}

/// `__tgt_rtl_unload_binary`.
///
/// # Safety
/// See the module docs.
pub unsafe fn unload_binary<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    image: *mut DeviceImage,
) -> i32 {
    status::<B, K>(names::UNLOAD_BINARY, || {
        observe::<B>(EntryCall::UnloadBinary { device });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            live.backend()
                .unload_binary(device, non_null("image", image)?)
        })
    })
}

/// `__tgt_rtl_data_alloc`; null on failure.
pub fn data_alloc<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    size: i64,
    host_ptr: *mut c_void,
    kind: i32,
) -> *mut c_void {
    guard::<B, K, *mut c_void, false>(names::DATA_ALLOC, ptr::null_mut(), || {
        let result = cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let bytes = size_arg("size", size)?;
            let kind = AllocKind::from_raw(kind).ok_or_else(|| {
                PluginError::InvalidArgument(format!("unknown allocation kind {kind}"))
            })?;
            live.backend()
                .data_alloc(device, bytes, host_ptr, kind)
                .map(NonNull::as_ptr)
        });
        observe::<B>(EntryCall::DataAlloc {
            device,
            size,
            kind,
            result: *result.as_ref().unwrap_or(&ptr::null_mut()),
        });
        result
    })
}

/// `__tgt_rtl_data_delete`.
pub fn data_delete<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    tgt_ptr: *mut c_void,
) -> i32 {
    status::<B, K>(names::DATA_DELETE, || {
        observe::<B>(EntryCall::DataDelete {
            device,
            ptr: tgt_ptr,
        });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            live.backend()
                .data_delete(device, non_null("tgt_ptr", tgt_ptr)?)
        })
    })
}

/// `__tgt_rtl_data_delete_batch`: free `ptrs[0..n]`, nulling each slot
/// freed (see [`omptarget_abi::plugin::DataDeleteBatchFn`]). Each block is
/// reported to [`Backend::on_entry`] as a [`EntryCall::DataDelete`].
///
/// # Safety
/// `ptrs` is null or valid for reads and writes of `n` pointers.
pub unsafe fn data_delete_batch<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    ptrs: *mut *mut c_void,
    n: i64,
) -> i32 {
    status::<B, K>(names::DATA_DELETE_BATCH, || {
        let n = size_arg("n", n)?;
        if n == 0 {
            return Ok(());
        }
        let ptrs = non_null("ptrs", ptrs)?;
        // SAFETY: the caller passes `n` readable and writable pointers.
        let slots = unsafe { std::slice::from_raw_parts_mut(ptrs.as_ptr(), n) };
        for &ptr in slots.iter() {
            observe::<B>(EntryCall::DataDelete { device, ptr });
        }
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            live.backend().data_delete_batch(device, slots)
        })
    })
}

/// `__tgt_rtl_data_submit[_async]`: host -> device. A zero size succeeds
/// without touching the pointers.
///
/// # Safety
/// See the module docs.
pub unsafe fn data_submit<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    tgt_ptr: *mut c_void,
    host_ptr: *mut c_void,
    size: i64,
    async_info: Option<*mut AsyncInfo>,
) -> i32 {
    let is_async = async_info.is_some();
    let entry = if is_async {
        names::DATA_SUBMIT_ASYNC
    } else {
        names::DATA_SUBMIT
    };
    status::<B, K>(entry, || {
        observe::<B>(EntryCall::DataSubmit {
            device,
            size,
            is_async,
        });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let size = size_arg("size", size)?;
            if size == 0 {
                return Ok(());
            }
            let tgt = non_null("tgt_ptr", tgt_ptr)?;
            let host = non_null("host_ptr", host_ptr)?;
            let backend = live.backend();
            queue::on_queue(backend, device, queue_arg(async_info), |queue| {
                // SAFETY: `host` names `size` readable bytes and `tgt` a
                // block of this device with room for them, until the queue
                // is synchronised (module contract).
                unsafe { backend.data_submit(device, tgt, host, size, queue) }
            })
        })
    })
}

/// `__tgt_rtl_data_retrieve[_async]`: device -> host. A zero size succeeds
/// without touching the pointers.
///
/// # Safety
/// See the module docs.
pub unsafe fn data_retrieve<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    host_ptr: *mut c_void,
    tgt_ptr: *mut c_void,
    size: i64,
    async_info: Option<*mut AsyncInfo>,
) -> i32 {
    let is_async = async_info.is_some();
    let entry = if is_async {
        names::DATA_RETRIEVE_ASYNC
    } else {
        names::DATA_RETRIEVE
    };
    status::<B, K>(entry, || {
        observe::<B>(EntryCall::DataRetrieve {
            device,
            size,
            is_async,
        });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let size = size_arg("size", size)?;
            if size == 0 {
                return Ok(());
            }
            let host = non_null("host_ptr", host_ptr)?;
            let tgt = non_null("tgt_ptr", tgt_ptr)?;
            let backend = live.backend();
            queue::on_queue(backend, device, queue_arg(async_info), |queue| {
                // SAFETY: `host` names `size` writable bytes and `tgt` a
                // block of this device holding them, until the queue is
                // synchronised (module contract).
                unsafe { backend.data_retrieve(device, host, tgt, size, queue) }
            })
        })
    })
}

/// `__tgt_rtl_is_data_exchangable`; 0 on failure.
pub fn is_data_exchangable<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    src: i32,
    dst: i32,
) -> i32 {
    guard::<B, K, i32, false>(names::IS_DATA_EXCHANGABLE, 0, || {
        observe::<B>(EntryCall::IsDataExchangable { src, dst });
        cell.with_live(|live| {
            let (s, d) = (live.device(src)?, live.device(dst)?);
            Ok(i32::from(live.backend().is_data_exchangable(s, d)))
        })
    })
}

/// `__tgt_rtl_data_exchange[_async]`: device -> device.
///
/// # Safety
/// See the module docs.
pub unsafe fn data_exchange<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    src: i32,
    src_ptr: *mut c_void,
    dst: i32,
    dst_ptr: *mut c_void,
    size: i64,
    async_info: Option<*mut AsyncInfo>,
) -> i32 {
    let is_async = async_info.is_some();
    let entry = if is_async {
        names::DATA_EXCHANGE_ASYNC
    } else {
        names::DATA_EXCHANGE
    };
    status::<B, K>(entry, || {
        observe::<B>(EntryCall::DataExchange {
            src,
            dst,
            size,
            is_async,
        });
        cell.with_live(|live| {
            let s = live.initialised_device(src)?;
            let d = live.initialised_device(dst)?;
            let size = size_arg("size", size)?;
            if size == 0 {
                return Ok(());
            }
            let src_ptr = non_null("src_ptr", src_ptr)?;
            let dst_ptr = non_null("dst_ptr", dst_ptr)?;
            let backend = live.backend();
            queue::on_queue(backend, s, queue_arg(async_info), |queue| {
                // SAFETY: both pointers name `size` bytes of their devices'
                // memory, until the queue is synchronised (module contract).
                unsafe { backend.data_exchange(s, src_ptr, d, dst_ptr, size, queue) }
            })
        })
    })
}

/// `__tgt_rtl_last_error_message`: see [`crate::last_error`].
///
/// # Safety
/// `buf` is null or writable for `cap` bytes.
pub unsafe fn last_error_message(buf: *mut std::ffi::c_char, cap: usize) -> usize {
    catch_unwind(|| {
        // SAFETY: per this function's contract.
        unsafe { crate::last_error::take_into(buf.cast::<u8>(), cap) }
    })
    .unwrap_or(0)
}

/// `__tgt_rtl_synchronize`: waits for `async_info`'s queue and gives it
/// back ([`Backend::synchronize`]); a null `async_info` waits for the
/// whole device ([`Backend::synchronize_device`]).
///
/// # Safety
/// `async_info` is null or a valid `__tgt_async_info` this caller owns,
/// whose `queue` field is null or set by this plugin.
pub unsafe fn synchronize<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    async_info: *mut AsyncInfo,
) -> i32 {
    status::<B, K>(names::SYNCHRONIZE, || {
        observe::<B>(EntryCall::Synchronize { device });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            queue::synchronize(live.backend(), device, queue_arg(Some(async_info)))
        })
    })
}

/// The `__tgt_async_info` of an async entry: `None` for a blocking entry,
/// and for an async entry given a null one (it then runs blocking).
///
/// The returned borrow is unbounded: the caller keeps it within the entry
/// call, during which the `__tgt_async_info` is the caller's (module
/// contract: a non-null pointer is valid for the access the entry makes).
fn queue_arg<'a>(async_info: Option<*mut AsyncInfo>) -> Option<&'a mut AsyncInfo> {
    // SAFETY: non-null (`as_mut` checks), and per the module contract a
    // valid `__tgt_async_info` that only this entry uses during the call.
    async_info.and_then(|p| unsafe { p.as_mut() })
}

/// `__tgt_rtl_set_info_flag`.
pub fn set_info_flag<B: Backend, K: Boundary>(cell: &PluginCell<B, K>, flags: u32) {
    guard::<B, K, (), false>(names::SET_INFO_FLAG, (), || {
        observe::<B>(EntryCall::SetInfoFlag { flags });
        cell.set_info_flags(flags);
        Ok(())
    })
}

/// `__tgt_rtl_print_device_info`.
pub fn print_device_info<B: Backend, K: Boundary>(cell: &PluginCell<B, K>, device: i32) {
    guard::<B, K, (), false>(names::PRINT_DEVICE_INFO, (), || {
        observe::<B>(EntryCall::PrintDeviceInfo { device });
        cell.with_live(|live| {
            let device = live.device(device)?;
            live.backend().print_device_info(device);
            Ok(())
        })
    })
}

/// `__tgt_rtl_get_device_info`: property `key` of `device` into
/// `value[..cap]` when it fits, its full size into `*size` (0: not known);
/// see [`omptarget_abi::plugin::GetDeviceInfoFn`]. An unknown key is
/// answered here, without the backend.
///
/// # Safety
/// `size` is null or writable; `value` is null or writable for `cap` bytes.
pub unsafe fn get_device_info<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    key: i32,
    value: *mut c_void,
    cap: usize,
    size: *mut usize,
) -> i32 {
    status::<B, K>(names::GET_DEVICE_INFO, || {
        observe::<B>(EntryCall::GetDeviceInfo { device, key });
        let size = non_null("size", size)?;
        if value.is_null() && cap > 0 {
            return Err(PluginError::NullPointer("value"));
        }
        let found = cell.with_live(|live| {
            let device = live.device(device)?;
            let Some(key) = DeviceInfoKey::from_raw(key) else {
                return Ok(None);
            };
            let found = live.backend().device_info(device, key)?;
            match (key.is_text(), found) {
                (_, None) => Ok(None),
                (true, Some(DeviceInfoValue::Text(text))) if text.is_empty() => Ok(None),
                (true, Some(DeviceInfoValue::Text(text))) => Ok(Some(text.into_bytes())),
                (false, Some(DeviceInfoValue::Number(n))) => Ok(Some(n.to_ne_bytes().to_vec())),
                (_, Some(other)) => Err(PluginError::backend(format!(
                    "the backend gave {other:?} for {key:?}, which is a {}",
                    if key.is_text() { "text" } else { "number" }
                ))),
            }
        })?;
        let bytes = found.unwrap_or_default();
        if !bytes.is_empty() && bytes.len() <= cap {
            // SAFETY: `value` is non-null (checked: `cap > 0`) and writable
            // for `cap >= bytes.len()` bytes (the caller's contract); a
            // fresh vector does not overlap it.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len()) };
        }
        // SAFETY: non-null (checked) and writable (the caller's contract).
        unsafe { size.as_ptr().write(bytes.len()) };
        Ok(())
    })
}

/// `__tgt_rtl_register_destruction_cb`: remember `callback(data)` for the
/// safety net; a null callback unregisters. Never initialises the plugin.
pub fn register_destruction_cb<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    callback: Option<DestructionCallback>,
    data: *mut c_void,
) {
    guard::<B, K, (), false>(names::REGISTER_DESTRUCTION_CB, (), || {
        observe::<B>(EntryCall::RegisterDestructionCb);
        cell.set_destruction_cb(callback, data);
        Ok(())
    })
}

/// The body of an entry a backend's plugin exports beside
/// [`crate::export_plugin!`]'s own (the CUDA plugin's event entries):
/// `f` runs on the backend for `device`, checked in range and initialised,
/// behind the same panic boundary, failure report and lazy initialisation
/// as every entry of the kit. Returns `OFFLOAD_SUCCESS` or `OFFLOAD_FAIL`.
pub fn device_entry<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    entry: &str,
    device: i32,
    f: impl FnOnce(&B, crate::DeviceId) -> Result<()>,
) -> i32 {
    status::<B, K>(entry, || {
        diagnostics::debug(B::NAME, &format_args!("{entry} {device}"));
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            f(live.backend(), device)
        })
    })
}
