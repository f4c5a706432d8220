//! The `ol*` entry points (each also as `...WithCodeLoc`, whose code
//! location is ignored: nothing here traces calls yet). Each goes through
//! the one panic boundary and the session's lifecycle gate, as every
//! OpenMP entry does; a call before `olInit` or after the last
//! `olShutDown` gets `OL_ERRC_UNINITIALIZED`, as LLVM's does.
//!
//! Ownership: every handle is the context's (the program never frees
//! one: `olDestroyQueue` hands it back); memory from `olMemAlloc` is the
//! program's until `olMemFree` or the last `olShutDown`; the
//! `ol_result_t` errors are static and never freed.
#![allow(non_snake_case)]

use super::boundary::{
    check, device_of, handle_arg, in_session, ol_entry, ol_info_entries, outside_the_gate,
    pointer_arg,
};
use super::context::{
    alloc_kind, free_blocks, handle_of, Allocation, Handle, Leftovers, Recorded, Target,
};
use super::device_info;
use super::errors::{ol_error, Errc, OlResult, Outcome, INTERNAL};
use super::info::InfoOut;
use super::programs;
use crate::boundary::guard;
use crate::export::export_c;
use crate::session::lifecycle::with_session;
use crate::session::Session;
use omptarget::DevicePtr;
use std::ffi::c_void;
use std::sync::Arc;

// The lifecycle.

extern "C-unwind" fn olInit() -> OlResult {
    guard("olInit", &INTERNAL as OlResult, || {
        with_session(|session| {
            // The session of a thread that closed the runtime at exit
            // (its late calls) has no plugins to load.
            let Some(runtime) = session.build_runtime() else {
                return ol_error!(
                    Errc::Uninitialized,
                    "the process is exiting: liboffload cannot start"
                ) as OlResult;
            };
            // The first call builds the runtime (loads the plugins) if no
            // OpenMP binary registered yet: the same one both APIs use.
            session.offload_api().init(runtime);
            std::ptr::null()
        })
    })
}
extern "C-unwind" fn olInitWithCodeLoc(_location: *mut c_void) -> OlResult {
    olInit()
}
export_c!(olInit, olInitWithCodeLoc);

/// `olShutDown`. The last one takes the context inside the session's
/// gate; then, outside it, waits until every queue has done its work and
/// ends the queues' workers (their work enters the gate itself); then,
/// inside it again, unloads the programs still loaded and gives the
/// blocks the program did not free back to their devices. The runtime
/// itself stays (the OpenMP API may be using it); it is torn down at the
/// session's end, as the OpenMP path's is.
extern "C-unwind" fn olShutDown() -> OlResult {
    let take = |session: &Session| session.offload_api().shut_down();
    let finish = |leftovers: Option<Leftovers>| {
        let Some(leftovers) = leftovers else {
            return Ok(());
        };
        for lane in &leftovers.lanes {
            // Its failures were the program's to ask for (olSyncQueue).
            let _ = lane.sync();
            lane.stop();
        }
        // Inside `outside_the_gate`'s panic boundary already.
        with_session(|session| release(session, leftovers))
    };
    outside_the_gate("olShutDown", take, finish)
}
extern "C-unwind" fn olShutDownWithCodeLoc(_location: *mut c_void) -> OlResult {
    olShutDown()
}
export_c!(olShutDown, olShutDownWithCodeLoc);

/// The last `olShutDown`'s release of the programs and blocks left.
fn release(session: &Session, leftovers: Leftovers) -> Outcome {
    let runtime = session.built_runtime();
    let mut failed = 0;
    for program in leftovers.programs {
        let device = runtime.and_then(|r| r.device(program.loaded.device_id).ok());
        if device.is_none_or(|d| programs::release(d, program.loaded).is_err()) {
            failed += 1;
        }
    }
    failed += free_blocks(runtime, &leftovers.blocks);
    if failed > 0 {
        return Err(ol_error!(
            Errc::BackendFailure,
            "some programs or blocks could not be released (see the debug output)"
        ));
    }
    Ok(())
}

// Platforms and devices.

/// `ol_device_iterate_cb_t`.
type IterateCallback = Option<unsafe extern "C-unwind" fn(*mut c_void, *mut c_void) -> bool>;

/// `olIterateDevices`: the callback runs outside the session's gate (it
/// is the program's code: it may call back in, wait for other threads or
/// fork; inside the gate a fork would wait for it). A C++ exception out
/// of the callback ends the process (Rust aborts on a foreign exception
/// at the panic boundary), where LLVM's would let it pass.
extern "C-unwind" fn olIterateDevices(
    callback: IterateCallback,
    user_data: *mut c_void,
) -> OlResult {
    let checks = |session: &Session| {
        let callback = callback.ok_or(ol_error!(Errc::InvalidNullPointer, "NULL == Callback"))?;
        let devices = session.offload_api().with(|c| Ok(c.device_handles()))?;
        Ok((callback, devices))
    };
    outside_the_gate("olIterateDevices", checks, |(callback, devices)| {
        for device in devices {
            // SAFETY: the program's callback with its own data, as the
            // header declares it.
            if !unsafe { callback(device as *mut c_void, user_data) } {
                break;
            }
        }
        Ok(())
    })
}
extern "C-unwind" fn olIterateDevicesWithCodeLoc(
    callback: IterateCallback,
    user_data: *mut c_void,
    _location: *mut c_void,
) -> OlResult {
    olIterateDevices(callback, user_data)
}
export_c!(olIterateDevices, olIterateDevicesWithCodeLoc);

/// `olGetPlatformInfo[Size]`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_platform(
    session: &Session,
    platform: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    session.offload_api().with(|c| {
        // SAFETY: our contract.
        unsafe { device_info::platform_info(c, handle_of(platform), prop, out) }
    })
}

ol_info_entries!(
    olGetPlatformInfo,
    olGetPlatformInfoWithCodeLoc,
    olGetPlatformInfoSize,
    olGetPlatformInfoSizeWithCodeLoc,
    platform,
    ol_error!(Errc::InvalidNullHandle, "NULL == Platform"),
    answer_platform
);

/// `olGetDeviceInfo[Size]`: the device looked up under the context's
/// lock, its properties read outside it.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_device(
    session: &Session,
    device: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    let (target, platform) = device_of(session, device)?;
    // The UID the OpenMP API gives the same device (LLVM 22's
    // `omp_get_uid_from_device`).
    let uid = match target {
        Target::Runtime(id) if prop == device_info::UID => session.device_uid(id),
        _ => None,
    };
    // SAFETY: our contract.
    unsafe {
        device_info::device_info(
            session.built_runtime(),
            target,
            platform,
            uid.as_deref(),
            prop,
            out,
        )
    }
}

ol_info_entries!(
    olGetDeviceInfo,
    olGetDeviceInfoWithCodeLoc,
    olGetDeviceInfoSize,
    olGetDeviceInfoSizeWithCodeLoc,
    device,
    ol_error!(Errc::InvalidNullHandle, "NULL == Device"),
    answer_device
);

// Memory.

/// How often `olMemAlloc` allocates again when the device hands out a
/// range that overlaps another `olMemAlloc` block (two devices may use
/// the same addresses), as LLVM 22 does.
const ALLOC_TRIES: usize = 50;

/// One allocation of `size` bytes on `target`: its address.
fn allocate_once(session: &Session, target: Target, kind: u32, size: usize) -> Outcome<usize> {
    match target {
        Target::Host => {
            // SAFETY: plain malloc; freed by olMemFree or the last
            // olShutDown.
            let block = unsafe { libc::malloc(size) };
            if block.is_null() {
                return Err(ol_error!(Errc::OutOfResources, "the host is out of memory"));
            }
            Ok(block as usize)
        }
        Target::Runtime(id) => {
            let device = session
                .built_runtime()
                .and_then(|r| r.device(id).ok())
                .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))?;
            // SAFETY: no host pointer; the block is the program's.
            let block = unsafe { device.alloc(size, std::ptr::null_mut(), alloc_kind(kind)) }
                .map_err(|e| {
                    tracing::debug!(error = %e, "olMemAlloc");
                    match e {
                        omptarget::Error::OutOfMemory { .. } => {
                            ol_error!(Errc::OutOfResources, "the device is out of memory")
                        }
                        _ => ol_error!(
                            Errc::BackendFailure,
                            "the device failed to allocate (see the debug output)"
                        ),
                    }
                })?;
            Ok(block.addr())
        }
    }
}

thread_local! {
    /// The device handle this thread allocated on last, and what it names
    /// (no destructor).
    static LAST_DEVICE: std::cell::Cell<(Handle, Target)> =
        const { std::cell::Cell::new((0, Target::Host)) };
}

/// What the device handle `device` names, without the context's lock when
/// it is the one this thread allocated on last. A handle is never given
/// twice and names one device for good, so the answer cannot go stale;
/// recording the block checks that the handle is still the context's.
fn device_target(session: &Session, device: Handle) -> Outcome<Target> {
    let (last, target) = LAST_DEVICE.with(std::cell::Cell::get);
    if last == device && device != 0 {
        return Ok(target);
    }
    let target = session
        .offload_api()
        .with(|c| Ok(c.device(device)?.target))?;
    LAST_DEVICE.with(|l| l.set((device, target)));
    Ok(target)
}

ol_entry!(
    olMemAlloc,
    olMemAllocWithCodeLoc,
    |session, device: *const c_void, kind: u32, size: usize, out: *mut *mut c_void| {
        check(size == 0, ol_error!(Errc::InvalidSize, "Size == 0"))?;
        handle_arg!(device, "Device")?;
        pointer_arg!(out, "AllocationOut")?;
        let target = device_target(session, handle_of(device))?;
        let allocation = Allocation {
            target,
            device: handle_of(device),
            kind,
            size,
        };
        // Rejected blocks are kept until the end, so that the device does
        // not hand the same range out again.
        let mut rejected = Vec::new();
        let mut outcome = Err(ol_error!(
            Errc::BackendFailure,
            "failed to allocate non-overlapping memory"
        ));
        for _ in 0..ALLOC_TRIES {
            let address = match allocate_once(session, target, kind, size) {
                Ok(address) => address,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            };
            match session.offload_api().record(address, allocation) {
                Ok(Recorded::Yes) => {
                    // SAFETY: `out` is writable (the caller's contract,
                    // checked non-null).
                    unsafe { out.write(address as *mut c_void) };
                    outcome = Ok(());
                    break;
                }
                Ok(Recorded::Overlaps) => rejected.push((address, allocation)),
                Err(e) => {
                    // Shut down by another thread meanwhile.
                    rejected.push((address, allocation));
                    outcome = Err(e);
                    break;
                }
            }
        }
        free_blocks(session.built_runtime(), &rejected);
        outcome
    }
);

ol_entry!(
    olMemFree,
    olMemFreeWithCodeLoc,
    |session, address: *mut c_void| {
        pointer_arg!(address, "Address")?;
        let allocation = session.offload_api().take(address as usize)?;
        if free_blocks(session.built_runtime(), &[(address as usize, allocation)]) > 0 {
            // Not freed: it stays the program's, recorded again (unless the
            // last olShutDown came meanwhile: then the runtime's own teardown
            // frees it and lists it).
            session.offload_api().restore(address as usize, allocation);
            return Err(ol_error!(
                Errc::BackendFailure,
                "the device failed to free the block"
            ));
        }
        Ok(())
    }
);

/// `ol_mem_info_t` values.
mod mem_key {
    pub const DEVICE: u32 = 0;
    pub const BASE: u32 = 1;
    pub const SIZE: u32 = 2;
    pub const TYPE: u32 = 3;
}

/// `olGetMemInfo[Size]`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_memory(
    session: &Session,
    ptr: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    let (base, allocation) = session.offload_api().with(|c| {
        c.allocation_containing(ptr as usize).ok_or(ol_error!(
            Errc::NotFound,
            "allocated memory information not found"
        ))
    })?;
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match prop {
            mem_key::DEVICE => out.write(allocation.device as *const c_void),
            mem_key::BASE => out.write(base as *const c_void),
            mem_key::SIZE => out.write(allocation.size),
            mem_key::TYPE => out.write(allocation.kind),
            _ => Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_mem_info_t value"
            )),
        }
    }
}

ol_entry!(
    olMemcpy,
    olMemcpyWithCodeLoc,
    |session,
     queue: *const c_void,
     dst: *mut c_void,
     dst_device: *const c_void,
     src: *const c_void,
     src_device: *const c_void,
     size: usize| {
        handle_arg!(dst_device, "DstDevice")?;
        handle_arg!(src_device, "SrcDevice")?;
        pointer_arg!(dst, "DstPtr")?;
        pointer_arg!(src, "SrcPtr")?;
        let (lane, to, from) = session.offload_api().with(|c| {
            let lane = match queue.is_null() {
                true => None,
                false => Some(Arc::clone(&c.queue(handle_of(queue))?.lane)),
            };
            Ok((
                lane,
                c.device(handle_of(dst_device))?.target,
                c.device(handle_of(src_device))?.target,
            ))
        })?;
        if (to, from) == (Target::Host, Target::Host) && lane.is_some() {
            return Err(ol_error!(
                Errc::InvalidArgument,
                "one of DstDevice and SrcDevice must be a non-host device if queue is specified"
            ));
        }
        if size == 0 {
            return Ok(());
        }
        let copy = Copy {
            to,
            from,
            dst: dst as usize,
            src: src as usize,
            size,
        };
        // The caller's contract, for each `run`: `src` is readable and `dst`
        // writable for `size` bytes on their devices, until the copy is
        // done (a queued copy: until its queue has done it).
        let Some(lane) = lane else {
            // SAFETY: the contract above.
            return unsafe { copy.run(session.built_runtime()) };
        };
        lane.submit(
            // SAFETY: the contract above.
            || unsafe { copy.run(session.built_runtime()) },
            // SAFETY: the contract above.
            || in_session(move |s| unsafe { copy.run(s.built_runtime()) }),
        )
    }
);

/// One `olMemcpy`, its addresses as numbers (queued work owns it).
#[derive(Clone, Copy)]
struct Copy {
    to: Target,
    from: Target,
    dst: usize,
    src: usize,
    size: usize,
}

impl Copy {
    /// # Safety
    /// `src` is readable and `dst` writable for `size` bytes on their
    /// devices.
    unsafe fn run(self, runtime: Option<&omptarget::Runtime>) -> Outcome {
        let Copy {
            to,
            from,
            dst,
            src,
            size,
        } = self;
        let (dst, src) = (dst as *mut c_void, src as *mut c_void);
        let device = |id: usize| {
            runtime
                .and_then(|r| r.device(id).ok())
                .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))
        };
        let failed = |e: omptarget::Error| {
            tracing::debug!(error = %e, "olMemcpy");
            ol_error!(
                Errc::BackendFailure,
                "the copy failed (see the debug output)"
            )
        };
        // SAFETY: in each arm, our contract.
        unsafe {
            match (to, from) {
                (Target::Host, Target::Host) => {
                    std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size);
                    Ok(())
                }
                (Target::Host, Target::Runtime(id)) => device(id)?
                    .retrieve(dst, DevicePtr::from_raw(src), size)
                    .map_err(failed),
                (Target::Runtime(id), Target::Host) => device(id)?
                    .submit(DevicePtr::from_raw(dst), src, size)
                    .map_err(failed),
                (Target::Runtime(to), Target::Runtime(from)) => {
                    let (to, from) = (device(to)?, device(from)?);
                    from.exchange(DevicePtr::from_raw(src), to, DevicePtr::from_raw(dst), size)
                        .map_err(failed)
                }
            }
        }
    }
}

// Queues.

ol_entry!(
    olCreateQueue,
    olCreateQueueWithCodeLoc,
    |session, device: *const c_void, out: *mut *mut c_void| {
        handle_arg!(device, "Device")?;
        pointer_arg!(out, "Queue")?;
        let queue = session.offload_api().with(|c| {
            let device = c.device(handle_of(device))?;
            Ok(c.create_queue(device.handle))
        })?;
        // SAFETY: `out` is writable (the caller's contract, checked non-null).
        unsafe { out.write(queue as *mut c_void) };
        Ok(())
    }
);

ol_entry!(
    olDestroyQueue,
    olDestroyQueueWithCodeLoc,
    |session, queue: *const c_void| {
        handle_arg!(queue, "Queue")?;
        session
            .offload_api()
            .with(|c| c.destroy_queue(handle_of(queue)))
    }
);

/// `olSyncQueue`: the queue checked inside the session's gate, its work
/// waited for outside it (the worker's work enters the gate itself, and
/// a fork must not wait for this wait).
extern "C-unwind" fn olSyncQueue(queue: *const c_void) -> OlResult {
    let checks = |session: &Session| {
        handle_arg!(queue, "Queue")?;
        session.offload_api().with(|c| {
            let lane = &c.queue(handle_of(queue))?.lane;
            // A queue that ran all its work at once has nothing to wait for.
            Ok((!lane.is_settled()).then(|| Arc::clone(lane)))
        })
    };
    outside_the_gate("olSyncQueue", checks, |lane| {
        lane.map_or(Ok(()), |l| l.sync())
    })
}
extern "C-unwind" fn olSyncQueueWithCodeLoc(
    queue: *const c_void,
    _location: *mut c_void,
) -> OlResult {
    olSyncQueue(queue)
}
export_c!(olSyncQueue, olSyncQueueWithCodeLoc);

/// `ol_queue_info_t` values.
mod queue_key {
    pub const DEVICE: u32 = 0;
    pub const EMPTY: u32 = 1;
}

/// `olGetQueueInfo[Size]`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_queue(
    session: &Session,
    queue: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    session.offload_api().with(|c| {
        let queue = c.queue(handle_of(queue))?;
        // SAFETY: each `out` call below writes what our contract allows.
        unsafe {
            match prop {
                queue_key::DEVICE => out.write(queue.device as *const c_void),
                queue_key::EMPTY => out.write(queue.lane.is_empty()?),
                _ => Err(ol_error!(
                    Errc::InvalidEnumeration,
                    "not an ol_queue_info_t value"
                )),
            }
        }
    })
}

ol_info_entries!(
    olGetMemInfo,
    olGetMemInfoWithCodeLoc,
    olGetMemInfoSize,
    olGetMemInfoSizeWithCodeLoc,
    ptr,
    ol_error!(Errc::InvalidNullPointer, "NULL == Ptr"),
    answer_memory
);

ol_info_entries!(
    olGetQueueInfo,
    olGetQueueInfoWithCodeLoc,
    olGetQueueInfoSize,
    olGetQueueInfoSizeWithCodeLoc,
    queue,
    ol_error!(Errc::InvalidNullHandle, "NULL == Queue"),
    answer_queue
);
