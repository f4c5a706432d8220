//! The registry's device slots, readable without a lock.
//!
//! Every target operation looks up its device slot and the device count,
//! so readers must not take a lock. The set of slots only grows, when a
//! plugin becomes used (registration, `__tgt_init_all_rtls`), and never
//! shrinks within a registry: a writer publishes a new snapshot of the
//! whole list (the old one plus the new slots) with one atomic store, and
//! keeps every older snapshot until the table drops, so a reader that
//! loaded any snapshot may borrow it for as long as it borrows the table.
//! A plugin becomes used at most once, so there are at most as many
//! snapshots as plugins.

use super::lock::lock;
use std::fmt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

type Snapshot<S> = Vec<Arc<S>>;

/// Append-only list of device slots (the registry's `DeviceSlot`); index =
/// OpenMP device number.
pub(crate) struct DeviceTable<S> {
    /// The newest snapshot, or null before the first device. It points
    /// into an `Arc` held by `snapshots`.
    current: AtomicPtr<Snapshot<S>>,
    /// Every snapshot published, the newest last. Released only when the
    /// table drops (which needs `&mut self`, so no reader is left).
    snapshots: Mutex<Vec<Arc<Snapshot<S>>>>,
}

impl<S> Default for DeviceTable<S> {
    fn default() -> Self {
        DeviceTable {
            current: AtomicPtr::default(),
            snapshots: Mutex::default(),
        }
    }
}

impl<S> DeviceTable<S> {
    /// The slots now, without a lock.
    pub fn all(&self) -> &[Arc<S>] {
        let current = self.current.load(Ordering::Acquire);
        if current.is_null() {
            return &[];
        }
        // SAFETY: a non-null `current` was made by `Arc::as_ptr` of a
        // snapshot that `snapshots` keeps until `self` drops, and snapshots
        // are never mutated once published; the Acquire load pairs with the
        // Release store in `extend`, so the snapshot's contents are visible.
        unsafe { &*current }
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.all().len()
    }

    /// The slot of device number `index`.
    pub fn get(&self, index: usize) -> Option<&S> {
        self.all().get(index).map(|slot| &**slot)
    }

    /// Append `count` new slots, the `i`-th made by `make(index, i)` where
    /// `index` is its device number, and publish them. Returns the device
    /// number of the first new slot.
    pub fn extend(&self, count: usize, make: impl Fn(usize, usize) -> S) -> usize {
        let mut snapshots = lock(&self.snapshots);
        let mut next: Snapshot<S> = snapshots.last().map(|s| (**s).clone()).unwrap_or_default();
        let first = next.len();
        if count == 0 {
            return first;
        }
        next.extend((0..count).map(|i| Arc::new(make(first + i, i))));
        let next = Arc::new(next);
        self.current
            .store(Arc::as_ptr(&next).cast_mut(), Ordering::Release);
        snapshots.push(next);
        first
    }
}

impl<S: fmt::Debug> fmt::Debug for DeviceTable<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.all()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::DeviceSlot;

    #[test]
    fn grows_and_keeps_earlier_borrows_valid() {
        let table = DeviceTable::<DeviceSlot>::default();
        assert_eq!(table.len(), 0);
        assert!(table.get(0).is_none());
        let first = table.extend(2, |i, local| DeviceSlot::new(i as i32, 0, local));
        assert_eq!(first, 0);
        let early = table.get(1).unwrap();
        let early_all = table.all();
        let next = table.extend(3, |i, local| DeviceSlot::new(i as i32, 1, local));
        assert_eq!(next, 2);
        assert_eq!(table.extend(0, |_, _| unreachable!()), 5);
        // Borrows of the older snapshot still read the same slots.
        assert_eq!(early.id, 1);
        assert_eq!(early_all.len(), 2);
        assert!(std::ptr::eq(early, table.get(1).unwrap()));
        let ids: Vec<(i32, usize, usize)> = table
            .all()
            .iter()
            .map(|s| (s.id, s.plugin, s.local))
            .collect();
        assert_eq!(ids, [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1), (4, 1, 2)]);
    }

    #[test]
    fn readers_on_other_threads_see_whole_snapshots() {
        let table = DeviceTable::<DeviceSlot>::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..50 {
                    table.extend(1, |i, local| DeviceSlot::new(i as i32, i, local));
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    let mut seen = 0;
                    while seen < 50 {
                        let all = table.all();
                        assert!(all.len() >= seen);
                        for (i, slot) in all.iter().enumerate() {
                            assert_eq!(slot.id as usize, i);
                        }
                        seen = all.len();
                    }
                });
            }
        });
        assert_eq!(table.len(), 50);
    }
}
