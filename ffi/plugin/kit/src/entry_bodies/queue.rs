//! The one place a `__tgt_async_info` meets a backend's typed queue
//! ([`Backend::Queue`]), as LLVM's plugins' `AsyncInfoWrapperTy` is:
//!
//! * a blocking entry (`__tgt_rtl_data_submit` ...), or an `_async` one
//!   given a null `__tgt_async_info`, runs its operation on a local queue
//!   and synchronises it before returning;
//! * an `_async` entry runs it on the queue its `__tgt_async_info` holds,
//!   made on first use (in the `queue` field: [`crate::backend::AsyncQueue`]) and kept
//!   there for the caller's `__tgt_rtl_synchronize` ([`synchronize`]),
//!   unless the backend says it is done already ([`Backend::is_done`]):
//!   then it is synchronised at once and the field stays null.
//!
//! A non-null `queue` field is one this module set for the same backend
//! (the entries' contract: the caller passes back what the plugin set).

use super::*;
use crate::backend::AsyncQueue;
use crate::DeviceId;

/// Run `op` on the queue of an operation entry of `device`: the queue of
/// `async_info` (an `_async` entry's, non-null) or a local one, as the
/// module docs say. Returns the operation's failure first, then the
/// synchronisation's.
pub(super) fn on_queue<B: Backend>(
    backend: &B,
    device: DeviceId,
    async_info: Option<&mut AsyncInfo>,
    op: impl FnOnce(&mut B::Queue) -> Result<()>,
) -> Result<()> {
    let Some(info) = async_info else {
        let mut queue = backend.create_queue(device)?;
        let done = op(&mut queue);
        let synchronised = backend.synchronize(device, queue);
        return done.and(synchronised);
    };
    if info.queue.is_null() {
        // First use: the queue is this call's until it is stored, so a
        // failure or panic of `op` leaves the caller's field empty.
        let mut queue = backend.create_queue(device)?;
        let done = op(&mut queue);
        if backend.is_done(&queue) {
            return done.and(backend.synchronize(device, queue));
        }
        info.queue = queue.into_raw();
        return done;
    }
    // SAFETY: a non-null field holds a queue this module stored for this
    // backend (module docs), not synchronised since; it is taken out for
    // the call and put back unless done (a panic of `op` drops it: the
    // backend's release of what it holds is its deinitialisation's).
    let mut queue = unsafe { take::<B::Queue>(info) };
    let done = op(&mut queue);
    if backend.is_done(&queue) {
        return done.and(backend.synchronize(device, queue));
    }
    info.queue = queue.into_raw();
    done
}

/// The queue `info` holds, taken back out of it (the field cleared).
///
/// # Safety
/// `info.queue` is a non-null [`AsyncQueue::into_raw`] of `Q` this module
/// stored.
unsafe fn take<Q: AsyncQueue>(info: &mut AsyncInfo) -> Q {
    // SAFETY: per this function's contract.
    let queue = unsafe { Q::from_raw(info.queue) };
    info.queue = ptr::null_mut();
    queue
}

/// `__tgt_rtl_synchronize`'s work: wait for `async_info`'s queue and give
/// it back ([`Backend::synchronize`]); one never made needs nothing; a
/// null `async_info` waits for the whole device
/// ([`Backend::synchronize_device`]).
pub(super) fn synchronize<B: Backend>(
    backend: &B,
    device: DeviceId,
    async_info: Option<&mut AsyncInfo>,
) -> Result<()> {
    match async_info {
        None => backend.synchronize_device(device),
        Some(info) if info.queue.is_null() => Ok(()),
        Some(info) => {
            // SAFETY: a non-null field holds a queue this module stored for
            // this backend (module docs).
            let queue = unsafe { take::<B::Queue>(info) };
            backend.synchronize(device, queue)
        }
    }
}

/// The body of an entry a backend's plugin exports beside
/// [`crate::export_plugin!`]'s own that works on the caller's queue (the
/// CUDA plugin's `record_event`/`wait_event`): as
/// [`super::device_entry`], with `f` given the queue of `async_info`,
/// made on first use as an `_async` entry's is. A null `async_info` is
/// refused.
///
/// # Safety
/// `async_info` is null or a valid `__tgt_async_info` the caller owns
/// during the call, whose `queue` field is null or set by this plugin.
pub unsafe fn queue_entry<B: Backend>(
    cell: &PluginCell<B>,
    entry: &str,
    device: i32,
    async_info: *mut AsyncInfo,
    f: impl FnOnce(&B, DeviceId, &mut B::Queue) -> Result<()>,
) -> i32 {
    status::<B>(entry, || {
        diagnostics::debug(B::NAME, &format_args!("{entry} {device}"));
        let info = queue_arg(Some(async_info)).ok_or(PluginError::NullPointer("async_info"))?;
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let backend = live.backend();
            on_queue(backend, device, Some(info), |queue| {
                f(backend, device, queue)
            })
        })
    })
}
