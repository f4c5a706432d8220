//! Fork safety of a plugin's own locks.
//!
//! A runtime runs a kernel through `__tgt_rtl_run_target_region`, and the
//! plugin takes short locks of its own on the way in (the host backend
//! checks the entry against its loaded images; the test plugin logs the
//! call). omptarget-rs's runtime lets a `fork()` proceed while other threads
//! are in kernels (its fork gate), so such a lock could be held at the fork
//! by a thread the child does not have, and the child would hang on it.
//!
//! So the plugin holds its locks across the fork itself: the cell registers
//! `pthread_atfork` handlers when it is first initialised. The prepare
//! handler takes the cell's state (read) and every lock
//! [`Backend::lock_for_fork`] returns; the parent and child handlers release
//! them. The plugin is initialised after the runtime created its session,
//! and prepare handlers run in the reverse order of registration: the
//! runtime's gate closes first (no thread of it is then inside a plugin
//! call other than a kernel), and only then the plugin waits for its locks,
//! which kernels' threads hold for a moment at most.
//!
//! Registered handlers cannot be removed; glibc drops them when the plugin
//! library is unloaded (they are registered with its `__dso_handle`), and
//! the handlers do nothing while the plugin is not initialised.

use crate::backend::Backend;
use crate::cell::PluginCell;
use std::cell::Cell;
use std::ptr::NonNull;

pub use crate::fork_locks::{ForkLocks, HeldAcrossFork};

thread_local! {
    /// What this (forking) thread holds between prepare and parent/child.
    /// A raw pointer: the thread-local needs no destructor.
    static HELD: Cell<Option<NonNull<dyn HeldAcrossFork>>> = const { Cell::new(None) };
}

/// The prepare handler's body for `cell`.
pub fn prepare<B: Backend>(cell: &'static PluginCell<B>) {
    let held: Box<dyn HeldAcrossFork> = Box::new(cell.hold_for_fork());
    let previous = HELD.with(|h| h.replace(Some(NonNull::from(Box::leak(held)))));
    debug_assert!(previous.is_none(), "nested fork prepare");
}

/// The parent and child handlers' body: release what prepare took.
pub fn release() {
    if let Some(held) = HELD.with(Cell::take) {
        // SAFETY: leaked by `prepare` on this thread, taken once.
        drop(unsafe { Box::from_raw(held.as_ptr()) });
    }
}
