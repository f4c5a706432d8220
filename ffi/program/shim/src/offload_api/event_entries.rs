//! The `ol*` entries of events and host functions (see `queues`: an
//! event is a position in its queue's work; a host function runs on its
//! queue's worker, in order, outside the session's gate: it is the
//! program's code, which may call back in, wait for other threads, or
//! fork).
#![allow(non_snake_case)]

use super::boundary::{
    check, entry, handle_arg, ol_entry, ol_info_entries, outside_the_gate, pointer_arg,
};
use super::context::handle_of;
use super::errors::{ol_error, Errc, OlResult, Outcome};
use super::info::InfoOut;
use crate::export::export_c;
use crate::session::Session;
use std::ffi::c_void;
use std::sync::Arc;

ol_entry!(
    olCreateEvent,
    olCreateEventWithCodeLoc,
    |session, queue: *const c_void, out: *mut *mut c_void| {
        handle_arg!(queue, "Queue")?;
        pointer_arg!(out, "Event")?;
        let event = session
            .offload_api()
            .with(|c| c.create_event(handle_of(queue)))?;
        // SAFETY: `out` is writable (the caller's contract, checked non-null).
        unsafe { out.write(event as *mut c_void) };
        Ok(())
    }
);

ol_entry!(
    olDestroyEvent,
    olDestroyEventWithCodeLoc,
    |session, event: *const c_void| {
        handle_arg!(event, "Event")?;
        session
            .offload_api()
            .with(|c| c.destroy_event(handle_of(event)))
    }
);

/// `olSyncEvent`: the event checked inside the session's gate, its work
/// waited for outside it (as `olSyncQueue`).
extern "C-unwind" fn olSyncEvent(event: *const c_void) -> OlResult {
    let checks = |session: &Session| {
        handle_arg!(event, "Event")?;
        session.offload_api().with(|c| {
            let event = c.event(handle_of(event))?;
            Ok((Arc::clone(&event.lane), event.position))
        })
    };
    outside_the_gate("olSyncEvent", checks, |(lane, position)| {
        lane.wait_for(position)
    })
}
extern "C-unwind" fn olSyncEventWithCodeLoc(
    event: *const c_void,
    _location: *mut c_void,
) -> OlResult {
    olSyncEvent(event)
}
export_c!(olSyncEvent, olSyncEventWithCodeLoc);

ol_entry!(
    olWaitEvents,
    olWaitEventsWithCodeLoc,
    |session, queue: *const c_void, events: *const *const c_void, count: usize| {
        handle_arg!(queue, "Queue")?;
        pointer_arg!(events, "Events")?;
        // SAFETY: `events` holds `count` handles (the caller's contract).
        let events = unsafe { std::slice::from_raw_parts(events, count) };
        let (lane, waits) = session.offload_api().with(|c| {
            let lane = Arc::clone(&c.queue(handle_of(queue))?.lane);
            let mut waits = Vec::new();
            for &event in events {
                check(
                    event.is_null(),
                    ol_error!(
                        Errc::InvalidNullHandle,
                        "olWaitEvents asked to wait on a NULL event"
                    ),
                )?;
                let event = c.event(handle_of(event))?;
                // The queue's own events come before what it is asked next.
                if !Arc::ptr_eq(&event.lane, &lane) && !event.lane.is_done(event.position)? {
                    waits.push((Arc::clone(&event.lane), event.position));
                }
            }
            Ok((lane, waits))
        })?;
        if waits.is_empty() {
            return Ok(());
        }
        // The queue's worker waits, outside the gate; a failure of the work
        // waited for is its own queue's to report.
        lane.enqueue(Box::new(move || {
            for (other, position) in waits {
                let _ = other.wait_for(position);
            }
            Ok(())
        }))
    }
);

/// `ol_event_info_t` values.
mod event_key {
    pub const QUEUE: u32 = 0;
    pub const IS_COMPLETE: u32 = 1;
}

/// `olGetEventInfo[Size]`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_event(
    session: &Session,
    event: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    let (queue, lane, position) = session.offload_api().with(|c| {
        let event = c.event(handle_of(event))?;
        Ok((event.queue, Arc::clone(&event.lane), event.position))
    })?;
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match prop {
            event_key::QUEUE => out.write(queue as *const c_void),
            event_key::IS_COMPLETE => out.write(lane.is_done(position)?),
            _ => Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_event_info_t value"
            )),
        }
    }
}

ol_info_entries!(
    olGetEventInfo,
    olGetEventInfoWithCodeLoc,
    olGetEventInfoSize,
    olGetEventInfoSizeWithCodeLoc,
    event,
    ol_error!(Errc::InvalidNullHandle, "NULL == Event"),
    answer_event
);

/// `ol_host_function_cb_t`.
type HostFunction = Option<unsafe extern "C-unwind" fn(*mut c_void)>;

/// `olLaunchHostFunction`: queued on the queue's worker, which runs it in
/// order outside the session's gate. A C++ exception out of it ends the
/// process (see `olIterateDevices`).
extern "C-unwind" fn olLaunchHostFunction(
    queue: *const c_void,
    callback: HostFunction,
    user_data: *mut c_void,
) -> OlResult {
    entry("olLaunchHostFunction", |session| {
        handle_arg!(queue, "Queue")?;
        let callback = callback.ok_or(ol_error!(Errc::InvalidNullPointer, "NULL == Callback"))?;
        let lane = session
            .offload_api()
            .with(|c| Ok(Arc::clone(&c.queue(handle_of(queue))?.lane)))?;
        // The program's data, as a number: the worker only hands it back.
        let data = user_data as usize;
        lane.enqueue(Box::new(move || {
            // SAFETY: the program's function with its own data, as the
            // header declares it.
            unsafe { callback(data as *mut c_void) };
            Ok(())
        }))
    })
}
extern "C-unwind" fn olLaunchHostFunctionWithCodeLoc(
    queue: *const c_void,
    callback: HostFunction,
    user_data: *mut c_void,
    _location: *mut c_void,
) -> OlResult {
    olLaunchHostFunction(queue, callback, user_data)
}
export_c!(olLaunchHostFunction, olLaunchHostFunctionWithCodeLoc);
