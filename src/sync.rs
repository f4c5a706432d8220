//! The core's one lock helper.

use std::sync::{Mutex, MutexGuard};

/// Lock, ignoring poisoning: every critical section of the core leaves the
/// data it guards consistent before anything in it can panic, so a panic
/// on another thread (caught at the C boundary) must not make the data
/// unusable.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
