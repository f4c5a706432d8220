//! State that every entry reads and only a lifecycle step writes, for
//! backends: [`omptarget_lifecycle::ReadMostly`] (readers count themselves
//! per thread stripe; no cache line every call of every thread writes),
//! with the calling thread's id supplied.

pub use omptarget_lifecycle::{ForkWriteGuard, ReadGuard, ReadMostly, StillRead, WriteGuard};

/// The calling thread's id for [`ReadMostly::read`]'s stripes.
pub fn thread_id() -> usize {
    // SAFETY: `pthread_self` has no precondition and cannot fail.
    unsafe { libc::pthread_self() as usize }
}

/// Read `lock` on the calling thread.
pub fn read<T>(lock: &ReadMostly<T>) -> ReadGuard<'_, T> {
    lock.read(thread_id())
}
