//! The crate's one way to take a `Mutex`, shared by the registry and the
//! device table (its own module, so that neither imports the other for it).

use std::sync::{Mutex, MutexGuard};

/// Lock `mutex`, taking its data even if a panic poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent between statements;
    // a panic elsewhere must not make the runtime unusable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
