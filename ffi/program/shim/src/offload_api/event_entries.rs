//! The `ol*` entries of events and host functions. Every operation is
//! done when the call that queues it returns, so an event is complete
//! when it is made, and a host function runs at once, on the calling
//! thread, outside the session's gate (it is the program's code: it may
//! call back in, wait for other threads, or fork).
#![allow(non_snake_case)]

use super::boundary::{
    check, handle_arg, ol_entry, ol_info_entries, outside_the_gate, pointer_arg,
};
use super::context::handle_of;
use super::errors::{ol_error, Errc, OlResult, Outcome};
use super::info::InfoOut;
use crate::export::export_c;
use crate::session::Session;
use std::ffi::c_void;

ol_entry!(
    olCreateEvent,
    olCreateEventWithCodeLoc,
    |session, queue: *const c_void, out: *mut *mut c_void| {
        handle_arg!(queue, "Queue")?;
        pointer_arg!(out, "Event")?;
        let event = session.offload_api().with(|c| {
            c.queue(handle_of(queue))?;
            Ok(c.create_event(handle_of(queue)))
        })?;
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

ol_entry!(
    olSyncEvent,
    olSyncEventWithCodeLoc,
    |session, event: *const c_void| {
        handle_arg!(event, "Event")?;
        session
            .offload_api()
            .with(|c| c.event(handle_of(event)).map(|_| ()))
    }
);

ol_entry!(
    olWaitEvents,
    olWaitEventsWithCodeLoc,
    |session, queue: *const c_void, events: *const *const c_void, count: usize| {
        handle_arg!(queue, "Queue")?;
        pointer_arg!(events, "Events")?;
        // SAFETY: `events` holds `count` handles (the caller's contract).
        let events = unsafe { std::slice::from_raw_parts(events, count) };
        session.offload_api().with(|c| {
            c.queue(handle_of(queue))?;
            for &event in events {
                check(
                    event.is_null(),
                    ol_error!(
                        Errc::InvalidNullHandle,
                        "olWaitEvents asked to wait on a NULL event"
                    ),
                )?;
                c.event(handle_of(event))?;
            }
            Ok(())
        })
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
    let queue = session
        .offload_api()
        .with(|c| c.event(handle_of(event)).map(|e| e.queue))?;
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match prop {
            event_key::QUEUE => out.write(queue as *const c_void),
            event_key::IS_COMPLETE => out.write(true),
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

/// `olLaunchHostFunction`: the queue checked inside the session's gate,
/// the function run outside it, before the call returns. A C++ exception
/// out of it ends the process (see `olIterateDevices`).
extern "C-unwind" fn olLaunchHostFunction(
    queue: *const c_void,
    callback: HostFunction,
    user_data: *mut c_void,
) -> OlResult {
    let checks = |session: &Session| {
        handle_arg!(queue, "Queue")?;
        let callback = callback.ok_or(ol_error!(Errc::InvalidNullPointer, "NULL == Callback"))?;
        session
            .offload_api()
            .with(|c| c.queue(handle_of(queue)).map(|_| callback))
    };
    outside_the_gate("olLaunchHostFunction", checks, |callback| {
        // SAFETY: the program's function with its own data, as the header
        // declares it.
        unsafe { callback(user_data) }
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
