//! Device numbers that name no device in the `omp_*` API calls.
//!
//! LLVM 14 fails such a call softly (NULL, 0 or `OFFLOAD_FAIL` with its
//! error line; the OpenMP layer does that). LLVM 19 and 22 look the device
//! up with `PM->getDevice` and end the process on failure (`FATAL_MESSAGE`:
//! `Device number 'N' out of range, only M devices available`, the number
//! as the exit code). Each call reaches that lookup only past its own early
//! returns (a null pointer, no bytes, the initial device), so each has a
//! predicate here saying whether it does; the session asks it before
//! calling the OpenMP layer and, if so, [`fatal_if_unknown`] ends the
//! process for a caller of those releases. Checked against both runtimes
//! by `tests/c/invalid_device_api_fatal.c`, one call per run.

use omptarget_openmp::{Fatal, Offload};
use std::ffi::{c_int, c_void};

/// Which numbers besides `0..num_devices` a call accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accepts {
    /// The initial device too (its early return comes before the lookup).
    DevicesAndInitial,
    /// Devices only: `llvm_omp_target_lock_mem` / `_unlock_mem` look up
    /// even the initial device's number, and it is no device.
    DevicesOnly,
}

/// LLVM 19+'s fatal error for `device_num` if it names no device (nor,
/// where `accepts` says so, the initial device) and the caller's release
/// has it ([`omptarget_openmp::Release::invalid_device_is_fatal`]); LLVM
/// 14's callers go on to the OpenMP layer's soft failure.
#[inline]
pub(crate) fn fatal_if_unknown(offload: &Offload<'_>, device_num: c_int, accepts: Accepts) {
    // A device first: the common case decides on one load, inline in the
    // caller (an out-of-line call saved and restored registers for it).
    if (0..offload.num_devices()).contains(&device_num) {
        return;
    }
    fatal_unless_initial(offload, device_num, accepts);
}

/// [`fatal_if_unknown`] past its common case (out of line: the initial
/// device's number is common, but not on a device's path).
#[inline(never)]
fn fatal_unless_initial(offload: &Offload<'_>, device_num: c_int, accepts: Accepts) {
    let devices = offload.num_devices();
    if accepts == Accepts::DevicesAndInitial && device_num == offload.initial_device() {
        return;
    }
    let release = crate::caller::calling_release();
    if release.invalid_device_is_fatal() {
        super::lifecycle::park_if_closed_by_another_thread();
        Fatal::device_out_of_range(device_num.into(), devices as usize, release).abort_as(release);
    }
}

/// `omp_target_memcpy` looks its devices up (source first, as LLVM's
/// device-to-device branch does) unless it has no bytes to copy or a null
/// pointer ("invalid arguments").
pub(crate) fn memcpy_looks_up(dst: *mut c_void, src: *const c_void, length: usize) -> bool {
    length != 0 && !dst.is_null() && !src.is_null()
}

/// `omp_target_memcpy_rect` looks its devices up in its first row's
/// `omp_target_memcpy`, which a call with invalid arguments (a null
/// pointer or array, no dimension, element size 0) or an empty block (a
/// volume of 0 in some dimension: no row, or rows of no bytes) never makes.
///
/// # Safety
/// Each non-null array holds `num_dims` elements.
pub(crate) unsafe fn memcpy_rect_looks_up(
    dst: *mut c_void,
    src: *const c_void,
    element_size: usize,
    num_dims: c_int,
    arrays: [*const usize; 5],
) -> bool {
    let Ok(dims) = usize::try_from(num_dims) else {
        return false;
    };
    if dst.is_null() || src.is_null() || element_size == 0 || dims == 0 {
        return false;
    }
    if arrays.iter().any(|a| a.is_null()) {
        return false;
    }
    // `arrays[0]` is the volume.
    // SAFETY: our `# Safety`: non-null (checked above), `num_dims` elements.
    let volume = unsafe { std::slice::from_raw_parts(arrays[0], dims) };
    !volume.contains(&0)
}
