//! One mapping: a host range, its device address and reference counts.

use super::lookup::HostRange;
use super::refcount::{RefCountDisplay, RefCounts};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A mapping as stored in the table (the table's lock protects it).
#[derive(Debug)]
pub(crate) struct MapEntry {
    pub host_base: usize,
    pub host_begin: usize,
    pub host_end: usize,
    /// The compiler's `map_var_info_t` (";name;file;line;col;;"), or 0.
    pub name: usize,
    pub device_begin: usize,
    pub refs: RefCounts,
    pub shared: Arc<EntryShared>,
}

impl MapEntry {
    /// A new entry; `shared` is its state outside the table's lock, new
    /// (`EntryShared::new`, or the table's recycled one:
    /// `Entries::fresh_shared`).
    pub fn new(
        host_base: usize,
        host_begin: usize,
        host_end: usize,
        device_begin: usize,
        name: usize,
        refs: RefCounts,
        shared: Arc<EntryShared>,
    ) -> Self {
        MapEntry {
            host_base,
            host_begin,
            host_end,
            name,
            device_begin,
            refs,
            shared,
        }
    }

    pub fn snapshot(&self) -> MappedEntry {
        MappedEntry {
            host_base: self.host_base,
            host_begin: self.host_begin,
            host_end: self.host_end,
            device_begin: self.device_begin,
            name: self.name,
            refs: self.refs,
        }
    }

    pub fn handle(&self) -> EntryHandle {
        EntryHandle {
            host_begin: self.host_begin,
            shared: Arc::clone(&self.shared),
        }
    }

    /// The device address the entry's memory was allocated at (and is
    /// freed at): `device_begin` less the padding allocated before it.
    pub fn allocation_begin(&self) -> usize {
        self.device_begin.wrapping_sub(self.shared.device_padding)
    }

    /// Device address of `host` (which lies in or near this entry).
    pub fn translate(&self, host: usize) -> usize {
        self.device_begin
            .wrapping_add(host.wrapping_sub(self.host_begin))
    }
}

impl HostRange for MapEntry {
    fn host_begin(&self) -> usize {
        self.host_begin
    }
    fn host_end(&self) -> usize {
        self.host_end
    }
}

/// State of an entry that lives outside the table's lock.
#[derive(Debug, Default)]
pub(crate) struct EntryShared {
    /// Held while data moves for this entry, taken before the table's lock
    /// is released, so that a thread finding the entry afterwards waits
    /// until the copy that made it valid is done (LLVM's `UpdateMtx`).
    update: Mutex<()>,
    /// Some sub-object may be a pointer attached through PTR_AND_OBJ.
    may_contain_attached_pointers: AtomicBool,
    /// Bytes allocated before `device_begin` ([`super::MapRequest`]'s
    /// `device_padding`). Kept here, not in the entry, so that an entry
    /// stays one 64-byte slot; it is read when the entry is removed, which
    /// touches this state anyway (the table recycles it).
    device_padding: usize,
    /// Threads between a data-end query that found this entry and its
    /// settling ([`super::MappingTable::end_data_end`]); changed under the
    /// table's lock only (atomic because the state is shared with handles).
    data_end_users: AtomicU32,
}

impl EntryShared {
    /// One more thread between its data-end query and its settling.
    pub(crate) fn add_data_end_user(&self) {
        self.data_end_users.fetch_add(1, Ordering::Relaxed);
    }

    /// This thread's data end is settled: how many other threads still are
    /// between theirs.
    pub(crate) fn remove_data_end_user(&self) -> u32 {
        // Never below zero, even if a settling had no query (a caller's
        // bug): a wrapped count would keep the entry forever.
        let before = self
            .data_end_users
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        before.saturating_sub(1)
    }

    pub(crate) fn new(device_padding: usize) -> Self {
        EntryShared {
            device_padding,
            ..EntryShared::default()
        }
    }
}

/// A reference to an entry that outlives the table's lock (LLVM passes an
/// iterator around). It stays valid after the entry is removed; it then
/// refers to the removed entry's state only.
#[derive(Debug, Clone)]
pub struct EntryHandle {
    host_begin: usize,
    shared: Arc<EntryShared>,
}

impl EntryHandle {
    /// A handle over `shared` alone (tests of the table's recycling).
    #[cfg(test)]
    pub(crate) fn for_test(shared: Arc<EntryShared>) -> Self {
        EntryHandle {
            host_begin: 0,
            shared,
        }
    }

    /// Host begin address of the entry.
    pub fn host_begin(&self) -> usize {
        self.host_begin
    }

    /// Is `entry` the entry this handle was made of (not one made since at
    /// the same address)?
    pub(crate) fn is(&self, entry: &MapEntry) -> bool {
        Arc::ptr_eq(&self.shared, &entry.shared)
    }

    /// Mark that a pointer inside this entry was attached (a shadow pointer
    /// exists for it).
    pub fn set_may_contain_attached_pointers(&self) {
        self.shared
            .may_contain_attached_pointers
            .store(true, Ordering::Release);
    }

    /// Was a pointer inside this entry ever attached?
    pub(crate) fn may_contain_attached_pointers(&self) -> bool {
        self.shared
            .may_contain_attached_pointers
            .load(Ordering::Acquire)
    }

    /// Hold the entry's data-movement lock.
    pub fn lock_update(&self) -> MutexGuard<'_, ()> {
        self.shared
            .update
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A copy of one mapping's fields, for results and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedEntry {
    /// Host base address of the mapped object (LLVM's `HstPtrBase`).
    pub host_base: usize,
    /// First host address of the mapping.
    pub host_begin: usize,
    /// One past the last host address of the mapping.
    pub host_end: usize,
    /// Device address of `host_begin`.
    pub device_begin: usize,
    /// Address of the compiler's `map_var_info_t` (";name;file;line;col;;"), or 0.
    pub name: usize,
    /// The mapping's dynamic and hold reference counts.
    pub refs: RefCounts,
}

impl MappedEntry {
    /// Size of the mapped host range, in bytes (`host_end - host_begin`).
    pub fn size(&self) -> usize {
        self.host_end.wrapping_sub(self.host_begin)
    }
    /// The dynamic count as LLVM prints it (`INF` when infinite).
    pub fn dynamic_display(&self) -> RefCountDisplay {
        RefCountDisplay(self.refs.dynamic)
    }
    /// The hold count as LLVM prints it (`INF` when infinite).
    pub fn hold_display(&self) -> RefCountDisplay {
        RefCountDisplay(self.refs.hold)
    }
}
