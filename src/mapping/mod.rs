//! The per-device table of host ranges mapped to device memory, with
//! OpenMP 5.1 reference counting as LLVM 14 implements it.
//!
//! * [`MappingTable`] holds the mappings keyed by host begin address,
//!   sorted in chunks (`store.rs`): a lookup examines the two neighbours of
//!   the section's begin that one search finds, O(log n) whatever the
//!   number of mappings (no linear scans).
//! * Each mapping has a dynamic and an `ompx_hold` reference count
//!   ([`RefCounts`]); `omp_target_associate_ptr` and `declare target`
//!   globals use an infinite dynamic count.
//! * The device-touching operations (LLVM's `getTargetPointer`,
//!   `getTgtPtrBegin`, `deallocTgtPtr`) are [`MappingTable`] methods; they take the device
//!   memory as a [`DeviceMemory`] so that the table knows nothing of plugins.
//! * Shadow pointers of PTR_AND_OBJ attachments live next to the mappings
//!   ([`ShadowPtr`]).
//!
//! The table is internally synchronised: one lock for the mappings, one for
//! the shadow pointers (LLVM's `DataMapMtx` and `ShadowMtx`), and a
//! per-mapping data-movement lock (LLVM's `UpdateMtx`).
//!
//! This module is the core's interface for the OpenMP layer
//! (`omptarget-openmp`): the table lives here because each device owns one
//! ([`crate::Device::mappings`]) and the shutdown report lists what is still
//! mapped, but only the OpenMP layer decides what to map. The typed Rust
//! API does not use it.
//!
//! Modules: `entry` (one mapping), `refcount` (its two counts), `store`
//! (where the mappings live; its unit tests in `store::tests`), `lookup`
//! (where a section falls relative to the mappings), `ops` (the
//! operations that allocate, copy or free device memory), `shadow`
//! (shadow pointers), `error` (LLVM 14's messages), `tests` (the table's
//! semantics, and a property test against a linear-scan model).

mod entry;
mod error;
mod lookup;
mod ops;
mod refcount;
mod shadow;
mod store;

pub use entry::EntryHandle;
pub use entry::MappedEntry;
pub use error::{HexPtr, MapFailure, MappingError};
pub use lookup::{LookupResult, ZeroLength};
pub use ops::{
    DeviceMemory, MapEvent, MapRequest, RefAction, TargetPointer, TgtPtrBegin, UnmapRequest,
};
pub use refcount::{RefCountDisplay, RefCounts, RefKind, INF_REF_COUNT};
pub use shadow::{ShadowPtr, ShadowVisit};

use entry::MapEntry;
use shadow::ShadowMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use store::Entries;

/// Host -> device mappings of one device. Internally synchronised.
#[derive(Debug, Default)]
pub struct MappingTable {
    entries: Mutex<Entries>,
    shadows: Mutex<ShadowMap>,
    /// How many shadow pointers there are, stored holding `shadows`: the
    /// checks that only matter when some pointer is attached read this
    /// instead of taking the lock.
    shadow_len: AtomicUsize,
}

/// One mapping still present, for the shutdown report.
#[derive(Debug, Clone)]
pub struct MappedRange {
    /// First host address of the mapping.
    pub host_begin: usize,
    /// Size of the mapped host range, in bytes.
    pub size: usize,
    /// Device address the range is mapped to.
    pub device_begin: usize,
    /// Dynamic reference count ([`INF_REF_COUNT`] for associated pointers and
    /// `declare target` globals).
    pub dynamic_refcount: u64,
    /// `ompx_hold` reference count.
    pub hold_refcount: u64,
}

impl MappingTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock_entries(&self) -> MutexGuard<'_, Entries> {
        // A panic while the lock was held cannot leave the entries half-updated
        // (an insert or remove checks what may fail before it changes
        // anything, and other updates are field stores), so keep going.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_shadows(&self) -> MutexGuard<'_, ShadowMap> {
        self.shadows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Mappings still present whose device memory was allocated by the
    /// runtime (not `associate_ptr` or globals, whose dynamic count is
    /// infinite), for the shutdown report.
    pub fn live_entries(&self) -> Vec<MappedRange> {
        Self::ranges_of(&self.lock_entries())
    }

    /// [`Self::live_entries`] if no call holds the table now, else `None`:
    /// for the teardown at exit, which waits for no lock a call in flight
    /// may hold (a call holds this one across its plugin's allocation and
    /// copies, and a call parked by its plugin until the process ends
    /// never lets it go).
    pub fn try_live_entries(&self) -> Option<Vec<MappedRange>> {
        let entries = match self.entries.try_lock() {
            Ok(entries) => entries,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(Self::ranges_of(&entries))
    }

    fn ranges_of(entries: &Entries) -> Vec<MappedRange> {
        entries
            .values()
            .filter(|e| !e.refs.is_dynamic_infinite())
            .map(|e| MappedRange {
                host_begin: e.host_begin,
                size: e.host_end.wrapping_sub(e.host_begin),
                device_begin: e.device_begin,
                dynamic_refcount: e.refs.dynamic,
                hold_refcount: e.refs.hold,
            })
            .collect()
    }

    /// Every mapping, in host address order (LLVM's table dump).
    pub fn entries(&self) -> Vec<MappedEntry> {
        self.lock_entries()
            .values()
            .map(MapEntry::snapshot)
            .collect()
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.lock_entries().len()
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.lock_entries().is_empty()
    }

    /// LLVM's `lookupMapping`: where `[begin, begin+size)` falls, and a copy
    /// of the entry the flags describe.
    pub fn lookup(&self, begin: usize, size: i64) -> (LookupResult, Option<MappedEntry>) {
        let entries = self.lock_entries();
        if let Some(entry) = entries.get(&begin) {
            if lookup::contains_section(entry, begin, size) {
                return (lookup::contained_in(begin), Some(entry.snapshot()));
            }
        }
        let result = entries.lookup(begin, size);
        let entry = result
            .key
            .and_then(|k| entries.get(&k))
            .map(MapEntry::snapshot);
        (result, entry)
    }

    /// Device address of `begin` if `[begin, begin+size)` overlaps a mapping
    /// at all (LLVM's two-argument `getTgtPtrBegin`, used for globals).
    pub fn translate(&self, begin: usize, size: i64) -> Option<usize> {
        let entries = self.lock_entries();
        if let Some(entry) = entries.get(&begin) {
            if lookup::contains_section(entry, begin, size) {
                return Some(entry.translate(begin));
            }
        }
        let result = entries.lookup(begin, size);
        if !result.overlaps() {
            return None;
        }
        let entry = entries.get(&result.key?)?;
        Some(entry.translate(begin))
    }

    /// Map a `declare target` global with an infinite count, unless its
    /// range already overlaps a mapping (LLVM tolerates several weak
    /// definitions of one symbol). `name` is its `map_var_info_t` (0: none,
    /// as LLVM 14 has it), which must stay valid as long as the table.
    /// Returns true when a mapping was added.
    pub fn insert_global(
        &self,
        host_addr: usize,
        size: usize,
        device_addr: usize,
        name: usize,
    ) -> bool {
        let mut entries = self.lock_entries();
        let result = entries.lookup(host_addr, size as i64);
        if result.overlaps() {
            return false;
        }
        let refs = RefCounts::new(RefKind::Dynamic, true);
        entries.insert(
            host_addr,
            MapEntry::new(
                host_addr,
                host_addr,
                host_addr.wrapping_add(size),
                device_addr,
                name,
                refs,
                Default::default(),
            ),
        );
        true
    }

    /// Remove the mapping of a global that [`MappingTable::insert_global`]
    /// added, when its library goes away. Only an infinite-count mapping
    /// with exactly this host and device address is removed; returns it.
    pub fn remove_global(&self, host_addr: usize, device_addr: usize) -> Option<MappedEntry> {
        let mut entries = self.lock_entries();
        let matches = entries.get(&host_addr).is_some_and(|e| {
            e.device_begin == device_addr && e.refs.is_dynamic_infinite() && e.refs.hold == 0
        });
        if !matches {
            return None;
        }
        entries.remove(&host_addr).map(|e| e.snapshot())
    }

    /// Record (or refresh) the shadow of the host pointer at
    /// `host_ptr_addr`. True when the device pointer must be written.
    pub fn upsert_shadow(&self, host_ptr_addr: usize, shadow: ShadowPtr) -> bool {
        let mut shadows = self.lock_shadows();
        let changed = shadows.upsert(host_ptr_addr, shadow);
        self.shadow_len.store(shadows.len(), Ordering::Relaxed);
        changed
    }

    /// Is any pointer attached (a shadow pointer recorded) at all? Read
    /// without the shadow lock: an answer a concurrent attach makes stale
    /// is as good as the same call made a moment earlier.
    pub fn has_shadows(&self) -> bool {
        self.shadow_len.load(Ordering::Relaxed) != 0
    }

    /// Is a pointer inside `[begin, begin+size)` attached?
    pub(crate) fn shadow_in(&self, begin: usize, size: usize) -> bool {
        self.has_shadows() && self.lock_shadows().any_in(begin, size)
    }

    /// The shadow of the host pointer at `host_ptr_addr`, if any.
    pub fn shadow(&self, host_ptr_addr: usize) -> Option<ShadowPtr> {
        self.lock_shadows().get(host_ptr_addr)
    }

    /// Number of shadow pointers.
    pub fn shadow_count(&self) -> usize {
        self.lock_shadows().len()
    }

    /// LLVM's `applyToShadowMapEntries`: visit the shadow pointers inside
    /// `[begin, begin+size)` of the object whose mapping is `entry`, under
    /// the shadow lock. Nothing is visited when the object cannot hold a
    /// pointer or its mapping never had a pointer attached.
    pub fn visit_shadows(
        &self,
        entry: Option<&EntryHandle>,
        begin: usize,
        size: i64,
        visit: impl FnMut(usize, &ShadowPtr) -> ShadowVisit,
    ) {
        if size < std::mem::size_of::<*const ()>() as i64 {
            return;
        }
        match entry {
            Some(handle) if handle.may_contain_attached_pointers() => {}
            _ => return,
        }
        let mut shadows = self.lock_shadows();
        shadows.visit_range(begin, size as usize, visit);
        self.shadow_len.store(shadows.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
