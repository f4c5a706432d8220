//! Handles as the program holds them (`ol_*_handle_t`): numbers from a
//! process-wide counter, never given twice and never dereferenced (see
//! `context`).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// A handle as the program holds it (`ol_*_handle_t`): a number, not null.
pub(crate) type Handle = usize;

/// The next handle. Handles step by 16 from a base far from small
/// integers, so that they look like the aligned addresses LLVM's are to
/// a program that prints them; they are never dereferenced.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x0100_0000);

pub(crate) fn new_handle() -> Handle {
    NEXT_HANDLE.fetch_add(16, Relaxed)
}

/// A handle from the program: its number (null is 0).
pub(crate) fn handle_of(ptr: *const c_void) -> Handle {
    ptr as usize
}
