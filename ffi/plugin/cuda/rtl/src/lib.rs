//! `libomptarget.rtl.cuda.so`: the omptarget-rs CUDA plugin.
//!
//! Runs nvptx offload images (cubins, bare or in an OffloadBinary) on
//! NVIDIA GPUs through the CUDA driver, which is loaded at run time: with
//! no `libcuda.so.1` the plugin reports 0 devices and prints nothing. The
//! backend is [`omptarget_plugin_cuda::CudaBackend`] (crate
//! `omptarget-plugin-cuda`, `ffi/plugin/cuda`); its documentation
//! describes the lifecycle and the launch rules. Nothing runs at load time.
//!
//! Besides the kit's entries it exports LLVM's event entries
//! (`__tgt_rtl_{create,record,wait,sync,destroy}_event`) over CUDA events,
//! and this project's `__tgt_rtl_event_elapsed_time` (`cuEventElapsedTime`),
//! each behind the kit's panic boundary (`entry_bodies::device_entry`, and
//! `queue_entry` for the two that work on the caller's queue); the runtime
//! uses them for the Rust API's `Event`s.

use omptarget_plugin_cuda::CudaBackend;
use omptarget_plugin_kit::abi::plugin::names;
use omptarget_plugin_kit::abi::AsyncInfo;
use omptarget_plugin_kit::entry_bodies::{device_entry, queue_entry};
use omptarget_plugin_kit::PluginError;
use std::ffi::c_void;
use std::ptr::NonNull;

omptarget_plugin_kit::export_plugin!(CudaBackend);

fn event_arg(event: *mut c_void) -> Result<NonNull<c_void>, PluginError> {
    NonNull::new(event).ok_or(PluginError::NullPointer("event"))
}

/// `__tgt_rtl_create_event`: a new event in `*event`.
///
/// # Safety
/// `event` is null (refused) or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_create_event(device: i32, event: *mut *mut c_void) -> i32 {
    device_entry(&__OMPTARGET_PLUGIN, names::CREATE_EVENT, device, |b, d| {
        let out = NonNull::new(event).ok_or(PluginError::NullPointer("event"))?;
        let created = b.create_event(d)?;
        // SAFETY: non-null, and writable per this entry's contract.
        unsafe { out.as_ptr().write(created) };
        Ok(())
    })
}

/// `__tgt_rtl_record_event`: `event` completes after what is queued on
/// `async_info` so far.
///
/// # Safety
/// `async_info` is null (refused) or a valid `__tgt_async_info` whose
/// queue is null or this plugin's.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_record_event(
    device: i32,
    event: *mut c_void,
    async_info: *mut AsyncInfo,
) -> i32 {
    let plugin = &__OMPTARGET_PLUGIN;
    // SAFETY: this entry's contract, as `queue_entry` requires.
    unsafe {
        queue_entry(
            plugin,
            names::RECORD_EVENT,
            device,
            async_info,
            |b, d, q| b.record_event(d, event_arg(event)?, q),
        )
    }
}

/// `__tgt_rtl_wait_event`: what is queued on `async_info` from now on
/// waits for `event`.
///
/// # Safety
/// `async_info` is null (refused) or a valid `__tgt_async_info` whose
/// queue is null or this plugin's.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_wait_event(
    device: i32,
    event: *mut c_void,
    async_info: *mut AsyncInfo,
) -> i32 {
    let plugin = &__OMPTARGET_PLUGIN;
    // SAFETY: this entry's contract, as `queue_entry` requires.
    unsafe {
        queue_entry(plugin, names::WAIT_EVENT, device, async_info, |b, d, q| {
            b.wait_event(d, event_arg(event)?, q)
        })
    }
}

/// `__tgt_rtl_sync_event`: the caller waits for `event`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_sync_event(device: i32, event: *mut c_void) -> i32 {
    device_entry(&__OMPTARGET_PLUGIN, names::SYNC_EVENT, device, |b, d| {
        b.sync_event(d, event_arg(event)?)
    })
}

/// `__tgt_rtl_destroy_event`.
#[no_mangle]
pub extern "C" fn __tgt_rtl_destroy_event(device: i32, event: *mut c_void) -> i32 {
    device_entry(&__OMPTARGET_PLUGIN, names::DESTROY_EVENT, device, |b, d| {
        b.destroy_event(d, event_arg(event)?)
    })
}

/// `__tgt_rtl_event_elapsed_time`: milliseconds between two completed
/// events, in `*ms` (this project's entry).
///
/// # Safety
/// `ms` is null (refused) or writable.
#[no_mangle]
pub unsafe extern "C" fn __tgt_rtl_event_elapsed_time(
    device: i32,
    start: *mut c_void,
    end: *mut c_void,
    ms: *mut f32,
) -> i32 {
    device_entry(
        &__OMPTARGET_PLUGIN,
        names::EVENT_ELAPSED_TIME,
        device,
        |b, d| {
            let out = NonNull::new(ms).ok_or(PluginError::NullPointer("ms"))?;
            let value = b.event_elapsed_ms(d, event_arg(start)?, event_arg(end)?)?;
            // SAFETY: this entry's contract.
            unsafe { out.as_ptr().write(value) };
            Ok(())
        },
    )
}

const _: () = {
    use omptarget_plugin_kit::abi::plugin as p;
    let _: p::EventElapsedTimeFn = __tgt_rtl_event_elapsed_time;
    let _: p::CreateEventFn = __tgt_rtl_create_event;
    let _: p::RecordEventFn = __tgt_rtl_record_event;
    let _: p::WaitEventFn = __tgt_rtl_wait_event;
    let _: p::SyncEventFn = __tgt_rtl_sync_event;
    let _: p::DestroyEventFn = __tgt_rtl_destroy_event;
};
