//! The blocking copies and fill behind a panic boundary named after their
//! export: what `omp_target_memcpy`, `omp_target_memcpy_rect` and
//! `omp_target_memset` run, and what their `_async` forms' helper tasks
//! run later (`helper_task`).

use crate::boundary::guard;
use crate::rect::Rect;
use crate::session::lifecycle::with_session_deferred;
use omptarget_abi::OFFLOAD_FAIL;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

/// `omp_target_memcpy` and its `_async` form (`api_since_llvm19`), behind the
/// panic boundary of the export `entry`.
///
/// # Safety
/// Each pointer plus its offset addresses `length` bytes on its device.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn memcpy_as(
    entry: &'static str,
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    guard(entry, OFFLOAD_FAIL, || {
        // An `_async` copy's helper task skips the copy once another thread's
        // exit closed the runtime (libomp's finaliser waits for the task).
        with_session_deferred(
            false,
            || OFFLOAD_FAIL,
            |s| {
                // SAFETY: each pointer plus its offset addresses `length` bytes
                // on its device (our caller's contract, `target_memcpy`'s too).
                unsafe {
                    s.target_memcpy(
                        dst, src, length, dst_offset, src_offset, dst_device, src_device,
                    )
                }
            },
        )
    })
}

/// `omp_target_memcpy_rect` and its `_async` form (`api_since_llvm19`), behind
/// the panic boundary of the export `entry`.
///
/// # Safety
/// The five arrays of `rect` hold `num_dims` elements each and describe
/// sub-volumes inside both buffers.
pub(crate) unsafe fn memcpy_rect_as(
    entry: &'static str,
    dst: *mut c_void,
    src: *const c_void,
    rect: Rect,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    guard(entry, OFFLOAD_FAIL, || {
        with_session_deferred(
            false,
            || OFFLOAD_FAIL,
            |s| {
                // SAFETY: the arrays hold `num_dims` elements and describe
                // sub-volumes inside both buffers (our caller's contract,
                // `target_memcpy_rect`'s too).
                unsafe { s.target_memcpy_rect(dst, src, &rect, dst_device, src_device) }
            },
        )
    })
}

/// `omp_target_memset` behind the panic boundary of the export `entry`
/// (also its `_async` form's task).
///
/// # Safety
/// `ptr` names `len` bytes of memory of `device_num`.
pub(crate) unsafe fn memset_as(
    entry: &'static str,
    ptr: *mut c_void,
    byte: c_int,
    len: usize,
    device_num: c_int,
) -> *mut c_void {
    guard(entry, ptr, || {
        // SAFETY: our caller's contract is the callee's.
        with_session_deferred(false, null_mut, |s| unsafe {
            s.target_memset(ptr, byte, len, device_num)
        })
    })
}
