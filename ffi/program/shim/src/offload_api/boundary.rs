//! What every `ol*` entry point shares: the panic boundary and the
//! session's gate with LLVM's first check ([`entry`]), LLVM's argument
//! checks ([`check`]), and the macros that define an entry with its
//! `...WithCodeLoc` form (whose code location is ignored: nothing here
//! traces calls yet) and export both.

use super::context::{handle_of, Handle, Target};
use super::errors::{to_result, OlError, OlResult, Outcome, INTERNAL, UNINITIALIZED};
use super::queues::Work;
use crate::boundary::guard;
use crate::session::lifecycle::with_session;
use crate::session::Session;
use std::ffi::c_void;

/// Run an entry's body behind the boundary and the gate, after LLVM's
/// first check: a call before `olInit` (or after the last `olShutDown`)
/// is `OL_ERRC_UNINITIALIZED`, whatever its arguments.
pub(super) fn entry(name: &'static str, body: impl FnOnce(&Session) -> Outcome) -> OlResult {
    guard(name, &INTERNAL as OlResult, || {
        with_session(|session| {
            if !session.offload_api().is_initialized() {
                return &UNINITIALIZED as OlResult;
            }
            to_result(body(session))
        })
    })
}

/// An entry that runs the program's own code (a callback) or waits for
/// it (a queue's work): `checks` inside the boundary and the session's
/// gate, after LLVM's first check, then `run` with what they give outside
/// the gate (the program's code may call back in, wait for other threads,
/// or fork; inside the gate a fork would wait for it).
pub(super) fn outside_the_gate<T>(
    name: &'static str,
    checks: impl FnOnce(&Session) -> Outcome<T>,
    run: impl FnOnce(T) -> Outcome,
) -> OlResult {
    guard(name, &INTERNAL as OlResult, || {
        let checked = with_session(|session| {
            if !session.offload_api().is_initialized() {
                return Err(&UNINITIALIZED);
            }
            checks(session)
        });
        to_result(checked.and_then(run))
    })
}

/// Queued work that runs `body` with the session, inside its gate, on
/// the queue's worker (as a call of the program's would).
pub(super) fn in_session(body: impl FnOnce(&Session) -> Outcome + Send + 'static) -> Work {
    Box::new(move || with_session(body))
}

/// LLVM's validation of one argument: `error` if `bad`. The entries make
/// these checks in LLVM 22's order: the conditions its API definition
/// lists, then null handles, then null pointers, each in argument order.
pub(super) fn check(bad: bool, error: &'static OlError) -> Outcome {
    if bad {
        Err(error)
    } else {
        Ok(())
    }
}

/// Define `$name` and `$name WithCodeLoc` (same arguments, then the code
/// location) from one body, which sees the arguments and the session and
/// returns an [`Outcome`]; export both.
macro_rules! ol_entry {
    ($name:ident, $with_loc:ident, |$session:ident $(, $arg:ident: $ty:ty)*| $body:block) => {
        extern "C-unwind" fn $name($($arg: $ty),*) -> $crate::offload_api::errors::OlResult {
            $crate::offload_api::boundary::entry(
                stringify!($name),
                |$session: &$crate::session::Session| $body,
            )
        }
        extern "C-unwind" fn $with_loc(
            $($arg: $ty,)*
            _location: *mut ::std::ffi::c_void,
        ) -> $crate::offload_api::errors::OlResult {
            $name($($arg),*)
        }
        $crate::export::export_c!($name, $with_loc);
    };
}

/// LLVM's check of a handle argument: `OL_ERRC_INVALID_NULL_HANDLE`,
/// "NULL == `$name`", if `$arg` is null.
macro_rules! handle_arg {
    ($arg:expr, $name:literal) => {{
        static ERROR: $crate::offload_api::errors::OlError =
            $crate::offload_api::errors::OlError::new(
                $crate::offload_api::errors::Errc::InvalidNullHandle,
                concat!("NULL == ", $name, "\0"),
            );
        $crate::offload_api::boundary::check($arg.is_null(), &ERROR)
    }};
}

/// LLVM's check of a pointer argument: `OL_ERRC_INVALID_NULL_POINTER`,
/// "NULL == `$name`", if `$arg` is null.
macro_rules! pointer_arg {
    ($arg:expr, $name:literal) => {{
        static ERROR: $crate::offload_api::errors::OlError =
            $crate::offload_api::errors::OlError::new(
                $crate::offload_api::errors::Errc::InvalidNullPointer,
                concat!("NULL == ", $name, "\0"),
            );
        $crate::offload_api::boundary::check($arg.is_null(), &ERROR)
    }};
}

/// An info query and its size query (`olGet*Info`, `olGet*InfoSize`, each
/// with its `...WithCodeLoc`), answered by `$answer(session, subject,
/// prop, out)`; `$null` is the error of a null `$subject`.
macro_rules! ol_info_entries {
    ($get:ident, $get_loc:ident, $size:ident, $size_loc:ident,
     $subject:ident, $null:expr, $answer:path) => {
        ol_entry!(
            $get,
            $get_loc,
            |session, $subject: *const c_void, prop: u32, size: usize, value: *mut c_void| {
                check(size == 0, ol_error!(Errc::InvalidSize, "PropSize == 0"))?;
                check($subject.is_null(), $null)?;
                check(
                    value.is_null(),
                    ol_error!(Errc::InvalidNullPointer, "NULL == PropValue"),
                )?;
                // SAFETY: `value` holds `size` bytes (the caller's contract).
                unsafe { $answer(session, $subject, prop, &InfoOut::value(size, value)) }
            }
        );
        ol_entry!(
            $size,
            $size_loc,
            |session, $subject: *const c_void, prop: u32, size_ret: *mut usize| {
                check($subject.is_null(), $null)?;
                check(
                    size_ret.is_null(),
                    ol_error!(Errc::InvalidNullPointer, "NULL == PropSizeRet"),
                )?;
                // SAFETY: `size_ret` is writable (the caller's contract).
                unsafe { $answer(session, $subject, prop, &InfoOut::size(size_ret)) }
            }
        );
    };
}

/// What the device handle `device` names and its platform's handle (read
/// under the context's lock, used outside it).
pub(super) fn device_of(session: &Session, device: *const c_void) -> Outcome<(Target, Handle)> {
    session.offload_api().with(|c| {
        let device = c.device(handle_of(device))?;
        Ok((device.target, device.platform))
    })
}

pub(crate) use {handle_arg, ol_entry, ol_info_entries, pointer_arg};
