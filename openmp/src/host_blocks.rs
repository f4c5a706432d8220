//! Blocks that `omp_target_alloc` took with `malloc` for a device number
//! that named the host only because no device existed yet.
//!
//! The initial device's number is the device count (LLVM 14's
//! `omp_get_initial_device`), and the count grows when the first library
//! registers and the plugins load. A program that calls
//! `omp_target_alloc(n, 0)` before that gets host memory for "device 0"; if
//! a library registers before its `omp_target_free(p, 0)`, device 0 is a
//! real device that never saw `p`. LLVM hands `p` to the plugin's free
//! (undefined behaviour); we remember such blocks, so the free still
//! reaches `free`. Only blocks taken while the count was 0 are recorded,
//! and the check on free costs one atomic load while there are none.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(crate) struct EarlyHostBlocks {
    /// Set while `blocks` may be non-empty (read without the lock).
    any: AtomicBool,
    blocks: Mutex<HashSet<usize>>,
}

impl EarlyHostBlocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<usize>> {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `ptr` was malloc'd for a device number that named the host because
    /// there was no device.
    pub(crate) fn record(&self, ptr: usize) {
        let mut blocks = self.lock();
        blocks.insert(ptr);
        self.any.store(true, Ordering::Release);
    }

    /// Forget `ptr` if it is recorded; true if it was.
    pub(crate) fn take(&self, ptr: usize) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let mut blocks = self.lock();
        let found = blocks.remove(&ptr);
        if blocks.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_block_is_taken_once() {
        let early = EarlyHostBlocks::default();
        assert!(!early.take(0x10));
        early.record(0x10);
        early.record(0x20);
        assert!(early.take(0x10));
        assert!(!early.take(0x10));
        assert!(early.take(0x20));
        assert!(!early.any.load(Ordering::Acquire));
    }
}
