//! The one panic boundary every C entry point goes through.
//!
//! Nothing may unwind into C: a panic inside the runtime is caught here,
//! reported on stderr, and turned into the entry's error value. The process
//! goes on; the runtime's state stays consistent because every lock the
//! runtime takes is poison-tolerant.
//!
//! One unwind must reach C: a kernel that ends its thread (`pthread_exit`,
//! cancellation). The launch intercepts it before any frame of ours
//! (`omptarget_thread_exit`), the runtime returns normally (or, where it
//! would print an error or abort for the failed launch, unwinds to here
//! with [`ThreadExiting`], silently), and the guard resumes the thread's
//! exit once the boundary is behind it. Every export is therefore
//! `extern "C-unwind"`: glibc's forced unwind passes through it to the
//! program's frames, as it passes through LLVM's C++ runtime.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The payload with which the shim leaves a call whose kernel ended the
/// thread, where it would otherwise report or abort (see the module docs).
pub(crate) struct ThreadExiting;

/// Leave the current call silently because its kernel ended the thread.
pub(crate) fn leave_for_thread_exit() -> ! {
    std::panic::resume_unwind(Box::new(ThreadExiting))
}

/// Run `body`; if it panics, report it and return `on_panic` instead. If
/// the thread is exiting, resume the exit (this never returns).
///
/// `entry` names the C function for the report.
pub(crate) fn guard<T>(entry: &'static str, on_panic: T, body: impl FnOnce() -> T) -> T {
    let result = catch_unwind(AssertUnwindSafe(body));
    omptarget_thread_exit::resume_pending();
    match result {
        Ok(value) => value,
        Err(payload) if payload.is::<ThreadExiting>() => on_panic,
        Err(payload) => {
            report_panic(entry, payload.as_ref());
            on_panic
        }
    }
}

/// Report a caught panic of `entry` on stderr.
pub(crate) fn report_panic(entry: &str, payload: &(dyn std::any::Any + Send)) {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic");
    eprintln!("Libomptarget error: internal error in {entry}: {what}");
}
