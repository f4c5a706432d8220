//! The atomics of the state machine: std's, or loom's when model-checking
//! (`RUSTFLAGS="--cfg loom"`).
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::cell::UnsafeCell;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// Between a `SeqCst` write of one word and a `SeqCst` read of another (a
/// reader counting itself then reading the flags; a close or fork setting
/// a flag then summing the readers).
///
/// Nothing in the real program: `SeqCst` operations are in one total order,
/// so of two such threads at least one sees the other's write. loom models
/// `SeqCst` accesses as `AcqRel` only (its documented limit, which reports
/// this very pattern as a race), but it does model `SeqCst` fences; the
/// fence gives the model the order the real accesses already have.
#[inline(always)]
pub(crate) fn store_load_order() {
    #[cfg(loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}
