//! CUDA events for the runtime's `__tgt_rtl_*_event` entries.

use crate::device::DeviceState;
use crate::driver::check;
use crate::{CudaBackend, Stream};
use cudarc::driver::sys;
use omptarget_plugin_kit::backend::DeviceId;
use omptarget_plugin_kit::error::{PluginError, Result};
use std::ffi::c_void;
use std::ptr::NonNull;

/// Events (`__tgt_rtl_*_event`, exported by `ffi/plugin/cuda/rtl` through
/// the kit's `entry_bodies::device_entry`): CUDA events without timing, tracked
/// per device so that teardown destroys what the runtime left.
impl CudaBackend {
    /// `__tgt_rtl_create_event`.
    pub fn create_event(&self, device: DeviceId) -> Result<*mut c_void> {
        self.with_state(device, |state, _| {
            let mut event = std::ptr::null_mut();
            // SAFETY: writable out-parameter; the context is current.
            check("cuEventCreate", unsafe {
                // With timing: `event_elapsed_ms` measures between two.
                sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
            })?;
            state.events.push(event);
            Ok(event.cast())
        })
    }

    /// `__tgt_rtl_record_event`: after everything queued so far on `queue`.
    pub fn record_event(
        &self,
        device: DeviceId,
        event: NonNull<c_void>,
        queue: &Stream,
    ) -> Result<()> {
        self.enqueue(device, queue, |stream, state, _| {
            let event = known_event(state, event)?;
            // SAFETY: an event and a stream of this context.
            Ok(check("cuEventRecord", unsafe {
                sys::cuEventRecord(event, stream)
            })?)
        })
    }

    /// `__tgt_rtl_wait_event`: `queue` waits for `event` on the device.
    pub fn wait_event(
        &self,
        device: DeviceId,
        event: NonNull<c_void>,
        queue: &Stream,
    ) -> Result<()> {
        self.enqueue(device, queue, |stream, state, _| {
            let event = known_event(state, event)?;
            // SAFETY: an event and a stream of this context.
            Ok(check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(stream, event, 0)
            })?)
        })
    }

    /// `__tgt_rtl_sync_event`: the host waits for `event` (without the
    /// device lock).
    pub fn sync_event(&self, device: DeviceId, event: NonNull<c_void>) -> Result<()> {
        let event = self.with_state(device, |state, _| known_event(state, event))?;
        // SAFETY: an event of this device's context, which stays retained
        // during an entry call (deinit runs under the plugin's write lock).
        Ok(check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(event)
        })?)
    }

    /// `__tgt_rtl_event_elapsed_time`: milliseconds from `start` to `end`,
    /// both completed events of this device.
    pub fn event_elapsed_ms(
        &self,
        device: DeviceId,
        start: NonNull<c_void>,
        end: NonNull<c_void>,
    ) -> Result<f32> {
        self.with_state(device, |state, _| {
            let (start, end) = (known_event(state, start)?, known_event(state, end)?);
            let mut ms = 0f32;
            // SAFETY: two events of this context; `ms` is writable.
            check("cuEventElapsedTime", unsafe {
                sys::cuEventElapsedTime(&mut ms, start, end)
            })?;
            Ok(ms)
        })
    }

    /// `__tgt_rtl_destroy_event`.
    pub fn destroy_event(&self, device: DeviceId, event: NonNull<c_void>) -> Result<()> {
        self.with_state(device, |state, _| {
            let event = known_event(state, event)?;
            state.events.retain(|e| *e != event);
            // SAFETY: an event of this context, destroyed once (removed
            // from the table first).
            Ok(check("cuEventDestroy_v2", unsafe {
                sys::cuEventDestroy_v2(event)
            })?)
        })
    }
}

/// `event` as one of `state`'s events, or why not.
fn known_event(state: &DeviceState, event: NonNull<c_void>) -> Result<sys::CUevent> {
    let event: sys::CUevent = event.as_ptr().cast();
    if state.events.contains(&event) {
        Ok(event)
    } else {
        Err(PluginError::InvalidArgument(format!(
            "{event:p} is not an event of this device (or was destroyed)"
        )))
    }
}
