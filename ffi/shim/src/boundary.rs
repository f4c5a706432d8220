//! The one panic boundary every C entry point goes through.
//!
//! Nothing may unwind into C: a panic inside the runtime is caught here,
//! reported on stderr, and turned into the entry's error value. The process
//! goes on; the runtime's state stays consistent because every lock the
//! runtime takes is poison-tolerant.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `body`; if it panics, report it and return `on_panic` instead.
///
/// `entry` names the C function for the report.
pub(crate) fn guard<T>(entry: &'static str, on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("unknown panic");
            eprintln!("Libomptarget error: internal error in {entry}: {what}");
            on_panic
        }
    }
}
