//! The atomics of the state machine: std's, or loom's when model-checking
//! (`RUSTFLAGS="--cfg loom"`).
//!
//! The protocols here rely on `SeqCst`'s single total order: a reader
//! counts itself and then reads a flag, a close, fork or writer sets the flag
//! and then sums the counts, and one of the two sees the other. loom models
//! `SeqCst` accesses as `AcqRel` only (its documented limit, which reports
//! this very pattern as a race) but models `SeqCst` fences. So under loom
//! the atomics below are wrappers that put a `SeqCst` fence between a
//! `SeqCst` store (or read-modify-write) and the next `SeqCst` load of the
//! same thread, which is exactly the order C++'s `SeqCst` gives such a pair
//! and `AcqRel` does not. Weaken either access of a pair in the real code
//! and the model loses the fence too, and finds the race.
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(loom)]
pub(crate) use model::{AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::cell::UnsafeCell;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

#[cfg(loom)]
mod model {
    use loom::sync::atomic::fence;
    use std::sync::atomic::Ordering::{self, SeqCst};

    loom::thread_local! {
        /// This thread made a `SeqCst` store not yet followed by a `SeqCst`
        /// load.
        static STORED: std::cell::Cell<bool> = std::cell::Cell::new(false);
    }

    /// After a store or read-modify-write made with `order`.
    fn after(order: Ordering) {
        if order == SeqCst {
            STORED.with(|s| s.set(true));
        }
    }

    /// Before a load made with `order`: a `SeqCst` load after a `SeqCst`
    /// store of this thread is ordered after it.
    fn before(order: Ordering) {
        if order == SeqCst && STORED.with(|s| s.replace(false)) {
            fence(SeqCst);
        }
    }

    macro_rules! model_atomic {
        ($name:ident, $inner:ty, $value:ty $(, $generic:ident)?) => {
            pub(crate) struct $name$(<$generic>)?($inner);

            impl$(<$generic>)? $name$(<$generic>)? {
                pub(crate) fn new(v: $value) -> Self {
                    Self(<$inner>::new(v))
                }
                pub(crate) fn load(&self, order: Ordering) -> $value {
                    before(order);
                    self.0.load(order)
                }
                pub(crate) fn store(&self, v: $value, order: Ordering) {
                    self.0.store(v, order);
                    after(order);
                }
                pub(crate) fn swap(&self, v: $value, order: Ordering) -> $value {
                    let old = self.0.swap(v, order);
                    after(order);
                    old
                }
                pub(crate) fn compare_exchange(
                    &self,
                    current: $value,
                    new: $value,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$value, $value> {
                    let result = self.0.compare_exchange(current, new, success, failure);
                    after(if result.is_ok() { success } else { failure });
                    result
                }
            }
        };
    }

    model_atomic!(AtomicUsize, loom::sync::atomic::AtomicUsize, usize);
    model_atomic!(AtomicBool, loom::sync::atomic::AtomicBool, bool);
    model_atomic!(AtomicPtr, loom::sync::atomic::AtomicPtr<T>, *mut T, T);

    impl AtomicUsize {
        pub(crate) fn fetch_add(&self, v: usize, order: Ordering) -> usize {
            let old = self.0.fetch_add(v, order);
            after(order);
            old
        }
        pub(crate) fn fetch_sub(&self, v: usize, order: Ordering) -> usize {
            let old = self.0.fetch_sub(v, order);
            after(order);
            old
        }
        pub(crate) fn fetch_or(&self, v: usize, order: Ordering) -> usize {
            let old = self.0.fetch_or(v, order);
            after(order);
            old
        }
        pub(crate) fn fetch_and(&self, v: usize, order: Ordering) -> usize {
            let old = self.0.fetch_and(v, order);
            after(order);
            old
        }
    }
}
