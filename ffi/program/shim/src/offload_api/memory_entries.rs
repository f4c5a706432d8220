//! The `ol*` entries of filled and registered memory.
//!
//! * `olMemFill` writes the pattern on the device of its queue, or, with
//!   no queue, on the device of the `olMemAlloc` block that holds the
//!   address (LLVM 22 requires the queue in practice: it reads the
//!   queue's device). On a runtime device the pattern is copied from a
//!   staging buffer of at most [`STAGING`] bytes at a time.
//! * `olMemRegister` on a host CPU device of this process: its device
//!   memory is this process's memory, so the host pointer is the pinned
//!   pointer, and the registration only counts users (ranges inside a
//!   registered one add a user; a partial overlap is refused, as LLVM's).
//!   A device that would need real pinning (CUDA, a remote one) answers
//!   `OL_ERRC_UNSUPPORTED`, and so does the initial device.
#![allow(non_snake_case)]

use super::boundary::{check, device_of, handle_arg, in_session, ol_entry, pointer_arg};
use super::context::{handle_of, Target};
use super::errors::{ol_error, Errc, Outcome};
use crate::session::Session;
use omptarget::{DeviceKind, DevicePtr};
use std::ffi::c_void;
use std::sync::Arc;

/// The largest staging buffer of one fill, in bytes (one pattern, if a
/// pattern is larger).
const STAGING: usize = 1 << 20;

ol_entry!(
    olMemFill,
    olMemFillWithCodeLoc,
    |session,
     queue: *const c_void,
     ptr: *mut c_void,
     pattern_size: usize,
     pattern: *const c_void,
     fill_size: usize| {
        check(
            pattern_size == 0 || !fill_size.is_multiple_of(pattern_size),
            ol_error!(Errc::InvalidSize, "FillSize % PatternSize != 0"),
        )?;
        pointer_arg!(ptr, "Ptr")?;
        pointer_arg!(pattern, "PatternPtr")?;
        let (target, lane) = session.offload_api().with(|c| {
            let block = c.allocation_containing(ptr as usize);
            let (device, lane) = match (queue.is_null(), block) {
                (false, _) => {
                    let queue = c.queue(handle_of(queue))?;
                    (queue.device, Some(Arc::clone(&queue.lane)))
                }
                (true, Some((_, block))) => (block.device, None),
                (true, None) => {
                    return Err(ol_error!(
                        Errc::InvalidArgument,
                        "no queue, and the address is in no olMemAlloc block"
                    ))
                }
            };
            // Where the address is a known block, the fill must be that
            // block's device's and stay inside it.
            if let Some((base, block)) = block {
                let room = block.size - (ptr as usize - base);
                check(
                    block.device != device || fill_size > room,
                    ol_error!(
                        Errc::InvalidArgument,
                        "the fill runs past its olMemAlloc block, or the block is another device's"
                    ),
                )?;
            }
            Ok((c.device(device)?.target, lane))
        })?;
        if fill_size == 0 {
            return Ok(());
        }
        // SAFETY: `pattern` holds `pattern_size` readable bytes (the
        // caller's contract).
        let pattern = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        let at = ptr as usize;
        // The caller's contract, for each `fill`: `ptr` is writable memory
        // of the target for `fill_size` bytes until the fill is done.
        let Some(lane) = lane else {
            // SAFETY: the contract above.
            return unsafe { fill(session, target, at, pattern, fill_size) };
        };
        lane.submit(
            // SAFETY: the contract above.
            || unsafe { fill(session, target, at, pattern, fill_size) },
            || {
                // Queued: the pattern is copied now, as LLVM's is.
                let pattern = pattern.to_vec();
                // SAFETY: the contract above.
                in_session(move |s| unsafe { fill(s, target, at, &pattern, fill_size) })
            },
        )
    }
);

/// Write `pattern` over `fill_size` bytes at `at` on `target`.
///
/// # Safety
/// `at` is writable memory of `target` for `fill_size` bytes, a multiple
/// of the pattern's (non-zero) size.
unsafe fn fill(
    session: &Session,
    target: Target,
    at: usize,
    pattern: &[u8],
    fill_size: usize,
) -> Outcome {
    let ptr = at as *mut c_void;
    let pattern_size = pattern.len();
    match target {
        Target::Host => {
            // A copy first: the pattern may lie in the range it fills.
            let pattern = pattern.to_vec();
            for i in 0..fill_size / pattern_size {
                // SAFETY: `ptr` is writable host memory for `fill_size`
                // bytes (our contract), and `pattern` is ours.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        pattern.as_ptr(),
                        ptr.cast::<u8>().add(i * pattern_size),
                        pattern_size,
                    )
                };
            }
            Ok(())
        }
        Target::Runtime(id) => {
            let device = session
                .built_runtime()
                .and_then(|r| r.device(id).ok())
                .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))?;
            // A pattern of a staging buffer's size or more is sent as it
            // is, once per copy; smaller ones repeated into one.
            let staging = if pattern_size >= STAGING {
                std::borrow::Cow::Borrowed(pattern)
            } else {
                let repeats = (STAGING / pattern_size).min(fill_size / pattern_size);
                std::borrow::Cow::Owned(pattern.repeat(repeats))
            };
            let mut done = 0;
            while done < fill_size {
                let n = staging.len().min(fill_size - done);
                // A device address: plain arithmetic, not a pointer into an
                // allocation of this process.
                let to = at.wrapping_add(done) as *mut c_void;
                // SAFETY: `at + done .. + n` is device memory of this device
                // (our contract); `staging` holds `n` readable bytes.
                unsafe { device.submit(DevicePtr::from_raw(to), staging.as_ptr().cast(), n) }
                    .map_err(|e| {
                        tracing::debug!(error = %e, "olMemFill");
                        ol_error!(
                            Errc::BackendFailure,
                            "the fill failed (see the debug output)"
                        )
                    })?;
                done += n;
            }
            Ok(())
        }
    }
}

/// The device handle `device` if it may register host memory: a host CPU
/// device of this process.
fn registering_device(session: &Session, device: *const c_void) -> Outcome {
    let (target, _) = device_of(session, device)?;
    let local_cpu = match target {
        Target::Host => false,
        Target::Runtime(id) => session
            .built_runtime()
            .and_then(|r| r.device(id).ok())
            .is_some_and(|d| d.kind() == Some(DeviceKind::HostCpu) && !d.is_remote()),
    };
    check(
        !local_cpu,
        ol_error!(
            Errc::Unsupported,
            "only a host CPU device of this process registers host memory, so far"
        ),
    )
}

ol_entry!(
    olMemRegister,
    olMemRegisterWithCodeLoc,
    |session,
     device: *const c_void,
     ptr: *mut c_void,
     size: usize,
     flags: u32,
     pinned: *mut *mut c_void| {
        let _ = flags; // reserved
        check(size == 0, ol_error!(Errc::InvalidSize, "Size == 0"))?;
        handle_arg!(device, "Device")?;
        pointer_arg!(ptr, "Ptr")?;
        pointer_arg!(pinned, "PinnedPtr")?;
        registering_device(session, device)?;
        session
            .offload_api()
            .with(|c| c.register(handle_of(device), ptr as usize, size))?;
        // SAFETY: `pinned` is writable (the caller's contract, checked
        // non-null).
        unsafe { pinned.write(ptr) };
        Ok(())
    }
);

ol_entry!(
    olMemUnregister,
    olMemUnregisterWithCodeLoc,
    |session, device: *const c_void, ptr: *mut c_void| {
        handle_arg!(device, "Device")?;
        pointer_arg!(ptr, "Ptr")?;
        session.offload_api().with(|c| {
            let device = c.device(handle_of(device))?.handle;
            c.unregister(device, ptr as usize)
        })
    }
);
