//! The atomics of the state machine: std's, or loom's when model-checking
//! (`RUSTFLAGS="--cfg loom"`).
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
