//! The mapping operations that may allocate, copy or free device memory:
//! LLVM 14's `getTargetPointer` (map on entry), `getTgtPtrBegin` (find and
//! release on exit), `deallocTgtPtr`, `associatePtr` and `disassociatePtr`.
//!
//! Callers decide the map-type semantics (to/always/close/present/hold,
//! whether to update the count) exactly as LLVM's callers do and pass them
//! in a request; the table applies them atomically under its lock.

use super::entry::{EntryHandle, MapEntry};
use super::error::{MapFailure, MappingError};
use super::lookup::{contains_section, ZeroLength};
use super::refcount::{RefCounts, RefKind};
use super::store::{prefetch_host, Entries};
use super::{MappingTable, ShadowVisit};
use std::sync::atomic::Ordering;

/// The device memory operations the table needs. Addresses are numbers:
/// the table never dereferences device addresses.
pub trait DeviceMemory {
    /// Allocate `size` bytes for the host data at `host_ptr`; `None` on
    /// failure.
    fn alloc(&self, size: usize, host_ptr: usize) -> Option<usize>;
    /// Free what `alloc` returned; false on failure.
    fn free(&self, device_ptr: usize) -> bool;
    /// Copy `size` bytes host -> device for the mapping named `name` (its
    /// `map_var_info_t`, for INFO output); false on failure. Called without
    /// the table's lock but under the entry's data-movement lock, so it must
    /// not call back into the table.
    ///
    /// # Safety
    /// `host_ptr..host_ptr+size` is readable host memory.
    unsafe fn submit(&self, device_ptr: usize, host_ptr: usize, size: usize, name: usize) -> bool;
    /// Called under the table's lock when `get_target_pointer` found or
    /// created a mapping, before any copy (where LLVM prints its INFO line).
    fn on_event(&self, _event: &MapEvent) {}
}

/// What a reference-count operation did, as LLVM's INFO messages say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefAction {
    /// The count was incremented.
    Incremented,
    /// The request asked for no count update, so the count was left as it was.
    UpdateSuppressed,
    /// The count was decremented (the mapping stays).
    Decremented,
    /// `delete` map type: the count was reset to one and decremented (another
    /// count keeps the mapping).
    Reset,
    /// The decrement would remove the mapping, so it is left to
    /// [`MappingTable::dealloc_tgt_ptr`].
    DeferredFinalDecrement,
    /// `delete` map type: the count was reset to one and its final decrement
    /// is left to [`MappingTable::dealloc_tgt_ptr`].
    ResetDeferredFinalDecrement,
}

impl RefAction {
    /// The text LLVM appends after the count, with its leading space.
    pub fn text(self) -> &'static str {
        match self {
            RefAction::Incremented => " (incremented)",
            RefAction::UpdateSuppressed => " (update suppressed)",
            RefAction::Decremented => " (decremented)",
            RefAction::Reset => " (reset)",
            RefAction::DeferredFinalDecrement => " (deferred final decrement)",
            RefAction::ResetDeferredFinalDecrement => " (reset, deferred final decrement)",
        }
    }

    /// The text LLVM 15+ append: they make the final decrement in the query
    /// ("delayed deletion": the data end removes the mapping later), and
    /// call a reset that does not remove the mapping a decrement.
    pub fn text_since_llvm15(self) -> &'static str {
        match self {
            RefAction::Reset => " (decremented)",
            RefAction::DeferredFinalDecrement => " (decremented, delayed deletion)",
            RefAction::ResetDeferredFinalDecrement => " (reset, delayed deletion)",
            other => other.text(),
        }
    }
}

/// A change of the table worth an INFO message (`LIBOMPTARGET_INFO`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapEvent {
    /// `getTargetPointer` found the data mapped ("Mapping exists...").
    Exists {
        /// The map is implicit (added by the compiler, not written in a `map` clause).
        implicit: bool,
        /// Host address the request started at.
        host_begin: usize,
        /// Device address of `host_begin`.
        target: usize,
        /// Size of the request, in bytes.
        size: i64,
        /// The mapping's counts after the operation.
        refs: RefCounts,
        /// The count the operation acted on.
        kind: RefKind,
        /// What happened to that count.
        action: RefAction,
        /// The variable's `map_var_info_t` address, or 0.
        name: usize,
    },
    /// `getTgtPtrBegin` found the data mapped ("Mapping exists with...").
    Found {
        /// Host address the request started at.
        host_begin: usize,
        /// Device address of `host_begin`.
        target: usize,
        /// Size of the request, in bytes.
        size: i64,
        /// The mapping's counts as LLVM 14 shows them: before a final
        /// decrement that is deferred (or made later by the data end).
        refs: RefCounts,
        /// The counts after everything this query did (LLVM 15+ make the
        /// final decrement in the query and show its result).
        refs_after: RefCounts,
        /// The count the operation acted on.
        kind: RefKind,
        /// What happened to that count.
        action: RefAction,
    },
    /// A mapping was created ("Creating new map entry with...").
    Created {
        /// Host base address of the mapped object (LLVM 15+ print it).
        host_base: usize,
        /// Host begin address of the new mapping.
        host_begin: usize,
        /// Start of the device allocation: `target` less the device
        /// padding (LLVM 15+ print it as `TgtAllocBegin`).
        alloc_begin: usize,
        /// Device address of `host_begin`.
        target: usize,
        /// Size of the mapping, in bytes.
        size: i64,
        /// Its initial counts (1 on the count the request selected).
        refs: RefCounts,
        /// The variable's `map_var_info_t` address, or 0.
        name: usize,
    },
    /// Unified shared memory: the section is used at its host address, no
    /// mapping is made (LLVM 15+ print "Return HstPtrBegin ... for unified
    /// shared memory").
    HostPointer {
        /// Host address of the section.
        host_begin: usize,
        /// Size of the section, in bytes (never 0).
        size: i64,
    },
    /// A mapping was removed ("Removing map entry with...").
    Removed {
        /// Host begin address of the removed mapping.
        host_begin: usize,
        /// Device address that was freed.
        target: usize,
        /// Size passed to the removal, in bytes.
        size: i64,
        /// The mapping's `map_var_info_t` address, or 0.
        name: usize,
    },
}

/// The arguments of LLVM's `getTargetPointer`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapRequest {
    /// First host address of the section to map.
    pub host_begin: usize,
    /// Host base address of the mapped object (LLVM's `HstPtrBase`).
    pub host_base: usize,
    /// Size of the section, in bytes.
    pub size: i64,
    /// `map_var_info_t` of the variable, or 0.
    pub name: usize,
    /// Copy host -> device when the mapping is new (or `always`).
    pub to: bool,
    /// `always` map modifier: copy host -> device even when the mapping exists.
    pub always: bool,
    /// The map is implicit (added by the compiler): a section that extends an
    /// existing mapping counts as found instead of failing.
    pub implicit: bool,
    /// Increment the count of an existing mapping.
    pub update_refcount: bool,
    /// `close` map modifier: allocate device memory even under unified shared
    /// memory.
    pub close: bool,
    /// `present` map modifier: fail ([`MapFailure::PresentMissing`]) rather than
    /// create a mapping.
    pub present: bool,
    /// `ompx_hold` map modifier: act on the hold count instead of the dynamic one.
    pub hold: bool,
    /// `requires unified_shared_memory` is in effect.
    pub unified_shared_memory: bool,
    /// Bytes allocated on the device before the section's first byte, so
    /// that the section keeps its host alignment there (LLVM 19's
    /// `TgtPadding` for a struct mapped from a member onward). They map no
    /// host memory: the entry covers `[host_begin, host_begin+size)` only.
    pub device_padding: usize,
    /// How a zero-length section is matched (the caller's release's rule).
    pub zero_length: ZeroLength,
    /// LLVM 22: copy nothing to the device for a mapping found (not
    /// created) that holds an attached pointer inside the section, so a
    /// second "new" map of a struct in one construct (its count still 1)
    /// does not overwrite the device pointer attached after the first.
    pub keep_attached_pointers: bool,
}

/// What `get_target_pointer` returns.
#[derive(Debug, Clone, Default)]
pub struct TargetPointer {
    /// The device address of `host_begin`; `None` is LLVM's nullptr.
    pub target: Option<usize>,
    /// The mapping was created now (or, without a count update, its total
    /// count is 1: it was allocated with its parent struct just now).
    pub is_new: bool,
    /// Unified shared memory: `target` is the host address itself.
    pub is_host_ptr: bool,
    /// The mapping found or created.
    pub entry: Option<EntryHandle>,
    /// Why `target` is `None`, when LLVM prints something for it.
    pub failure: Option<MapFailure>,
    /// What changed, for INFO output.
    pub event: Option<MapEvent>,
    /// The copy to the device was skipped: the mapping found holds an
    /// attached pointer in the section ([`MapRequest::keep_attached_pointers`]).
    pub keeps_attached_pointers: bool,
}

/// The arguments of LLVM's `getTgtPtrBegin` (with count update).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnmapRequest {
    /// First host address of the section to unmap.
    pub host_begin: usize,
    /// Size of the section, in bytes.
    pub size: i64,
    /// Decrement (or reset, with `force_delete`) the count.
    pub update_refcount: bool,
    /// Act on the hold count instead of the dynamic one.
    pub hold: bool,
    /// Only a section inside a mapping counts as found.
    pub must_contain: bool,
    /// `delete` map type: reset the count to one before the decrement.
    pub force_delete: bool,
    /// `requires unified_shared_memory` is in effect: unmapped data is used at
    /// its host address.
    pub unified_shared_memory: bool,
    /// How a zero-length section is matched (the caller's release's rule).
    pub zero_length: ZeroLength,
    /// The query of a data environment's end (LLVM's `FromDataEnd`), whose
    /// found mapping is settled later by [`MappingTable::end_data_end`]:
    /// the final decrement is made now (the count reaches zero, and a
    /// thread mapping the data meanwhile reuses the device copy), and the
    /// entry counts this thread among its data-end users, so that only
    /// the last of them removes it, and only if nobody mapped it again.
    /// Without it the final decrement is deferred to
    /// [`MappingTable::dealloc_tgt_ptr`] (LLVM 14's order, which lost a
    /// concurrent region's device writes: LLVM issue 54216).
    pub from_data_end: bool,
}

/// What `get_tgt_ptr_begin` returns.
#[derive(Debug, Clone, Default)]
pub struct TgtPtrBegin {
    /// The device address of `host_begin`; `None` when nothing maps it.
    pub target: Option<usize>,
    /// The final decrement is deferred to `dealloc_tgt_ptr`: the mapping
    /// goes away then.
    pub is_last: bool,
    /// Unified shared memory: `target` is the host address itself.
    pub is_host_ptr: bool,
    /// The mapping found.
    pub entry: Option<EntryHandle>,
    /// What the count operation did, for INFO output.
    pub event: Option<MapEvent>,
}

fn non_null(address: usize) -> Option<usize> {
    (address != 0).then_some(address)
}

/// The first branch of [`MappingTable::get_target_pointer`]: the section
/// lies in (or, implicitly, overlaps) `entry`; count the new reference (or
/// not) and say so.
fn use_existing(
    entry: &mut MapEntry,
    request: &MapRequest,
    kind: RefKind,
    memory: &dyn DeviceMemory,
    out: &mut TargetPointer,
) {
    let action = if request.update_refcount {
        entry.refs.increment(kind);
        RefAction::Incremented
    } else {
        out.is_new = entry.refs.total() == 1;
        RefAction::UpdateSuppressed
    };
    let target = entry.translate(request.host_begin);
    let event = MapEvent::Exists {
        implicit: request.implicit,
        host_begin: request.host_begin,
        target,
        size: request.size,
        refs: entry.refs,
        kind,
        action,
        name: request.name,
    };
    memory.on_event(&event);
    out.event = Some(event);
    out.target = non_null(target);
    out.entry = Some(entry.handle());
}

/// LLVM 22's `FailOnPtrFound`: a copy due to a mapping found whose
/// section holds an attached pointer (`shadowed`, asked before the lock)
/// is not made. The entry's flag says a pointer inside it was attached at
/// all; a shadow left over from a removed mapping does not count.
fn skip_copy_if_shadowed(shadowed: bool, out: &mut TargetPointer) {
    if shadowed
        && out
            .entry
            .as_ref()
            .is_some_and(|e| e.may_contain_attached_pointers())
    {
        out.keeps_attached_pointers = true;
    }
}

/// The found branch of [`MappingTable::get_tgt_ptr_begin`]: count the
/// release on `entry` (or not) and say so.
fn unmap_found(
    entry: &mut MapEntry,
    request: &UnmapRequest,
    kind: RefKind,
    with_handle: bool,
    out: &mut TgtPtrBegin,
) {
    out.is_last = entry.refs.decrement_removes(kind, request.force_delete);
    let action = if !request.update_refcount {
        RefAction::UpdateSuppressed
    } else if request.force_delete {
        entry.refs.reset(kind);
        if out.is_last {
            RefAction::ResetDeferredFinalDecrement
        } else {
            entry.refs.decrement(kind);
            RefAction::Reset
        }
    } else if out.is_last {
        RefAction::DeferredFinalDecrement
    } else {
        entry.refs.decrement(kind);
        RefAction::Decremented
    };
    // The counts as LLVM 14's INFO line shows them: a deferred final
    // decrement not yet made.
    let shown = entry.refs;
    if request.from_data_end {
        if request.update_refcount && out.is_last {
            entry.refs.decrement(kind);
        }
        entry.shared.add_data_end_user();
    }
    let target = entry.translate(request.host_begin);
    out.event = Some(MapEvent::Found {
        host_begin: request.host_begin,
        target,
        size: request.size,
        refs: shown,
        refs_after: entry.refs,
        kind,
        action,
    });
    out.target = non_null(target);
    if with_handle {
        out.entry = Some(entry.handle());
    }
}

impl MappingTable {
    /// LLVM's `getTargetPointer`: find or create the mapping of
    /// `[host_begin, host_begin+size)` and, for a new mapping with `to` (or
    /// with `always`), copy the data to the device. The copy runs under the
    /// entry's data-movement lock taken before the table's lock is released.
    pub fn get_target_pointer(
        &self,
        request: &MapRequest,
        memory: &dyn DeviceMemory,
    ) -> TargetPointer {
        if request.to && request.size > 0 {
            prefetch_host(request.host_begin, request.size as usize);
        }
        // Asked before the entries' lock (shadow pointers come first in the
        // lock order), and used only for a mapping found below, whose
        // attached pointers these are.
        let shadowed = request.keep_attached_pointers
            && request.to
            && request.size > 0
            && self.shadow_in(request.host_begin, request.size as usize);
        let mut entries = self.lock_entries();
        let kind = RefKind::from_hold(request.hold);
        let mut out = TargetPointer::default();
        // The `map_var_info_t` of the entry found or made, for the copy.
        let mut entry_name = 0;

        // A section mapped before and found again at its begin: the lookup's
        // answer in one descent (`contains_section`).
        // One search for all three: the exact entry, the lookup and the
        // insert of a new mapping.
        let at = entries.position(request.host_begin);
        let exact = entries
            .get_mut_at(at, request.host_begin)
            .filter(|e| contains_section(&**e, request.host_begin, request.size));
        let found = match exact {
            Some(entry) => {
                entry_name = entry.name;
                use_existing(entry, request, kind, memory, &mut out);
                skip_copy_if_shadowed(shadowed, &mut out);
                None
            }
            None => {
                Some(entries.lookup_with(at, request.host_begin, request.size, request.zero_length))
            }
        };

        let Some(found) = found else {
            return self.finish_target_pointer(entries, request, out, entry_name, memory);
        };
        if found.contained || (found.extends() && request.implicit) {
            let key = found.key.expect("an overlapping lookup names its entry");
            let entry = entries.get_mut(&key).expect("lookup keys exist");
            entry_name = entry.name;
            use_existing(entry, request, kind, memory, &mut out);
            skip_copy_if_shadowed(shadowed, &mut out);
        } else if found.extends() {
            let key = found.key.expect("an overlapping lookup names its entry");
            let entry = &entries[&key];
            out.failure = Some(MapFailure::ExplicitExtension {
                host_begin: request.host_begin,
                size: request.size,
                mapped_begin: entry.host_begin,
                mapped_size: entry.host_end.wrapping_sub(entry.host_begin) as i64,
                present: request.present,
            });
        } else if request.unified_shared_memory && !request.close {
            if request.size != 0 {
                out.is_host_ptr = true;
                out.target = non_null(request.host_begin);
                let event = MapEvent::HostPointer {
                    host_begin: request.host_begin,
                    size: request.size,
                };
                memory.on_event(&event);
                out.event = Some(event);
            }
        } else if request.present {
            out.failure = Some(MapFailure::PresentMissing {
                host_begin: request.host_begin,
                size: request.size,
            });
        } else if request.size != 0 {
            // LLVM inserts the entry even when the allocation failed; an
            // entry with a null device address helps nobody, so we don't.
            let alloc_size = (request.size as usize).saturating_add(request.device_padding);
            match memory.alloc(alloc_size, request.host_begin) {
                Some(allocated) if allocated != 0 => {
                    let device = allocated.wrapping_add(request.device_padding);
                    let entry = MapEntry::new(
                        request.host_base,
                        request.host_begin,
                        request.host_begin.wrapping_add(request.size as usize),
                        device,
                        request.name,
                        RefCounts::new(kind, false),
                        entries.fresh_shared(request.device_padding),
                    );
                    out.is_new = true;
                    out.target = Some(device);
                    out.entry = Some(entry.handle());
                    entry_name = request.name;
                    let event = MapEvent::Created {
                        host_base: request.host_base,
                        host_begin: request.host_begin,
                        alloc_begin: allocated,
                        target: device,
                        size: request.size,
                        refs: entry.refs,
                        name: request.name,
                    };
                    memory.on_event(&event);
                    out.event = Some(event);
                    entries.insert_at(at, request.host_begin, entry);
                }
                _ => {
                    out.failure = Some(MapFailure::AllocFailed { size: request.size });
                }
            }
        }

        self.finish_target_pointer(entries, request, out, entry_name, memory)
    }

    /// The end of [`MappingTable::get_target_pointer`]: the copy to the
    /// device of a new (or `always`) mapping under the entry's update lock,
    /// taken before the table's lock (`entries`) is released; or else a wait
    /// for a copy another thread issued for the entry.
    fn finish_target_pointer(
        &self,
        entries: std::sync::MutexGuard<'_, Entries>,
        request: &MapRequest,
        mut out: TargetPointer,
        entry_name: usize,
        memory: &dyn DeviceMemory,
    ) -> TargetPointer {
        let copy_to_device = request.to
            && (out.is_new || request.always)
            && !out.is_host_ptr
            && !out.keeps_attached_pointers;
        match (out.target, out.entry.clone()) {
            (Some(target), Some(handle)) if copy_to_device => {
                let update_guard = handle.lock_update();
                drop(entries);
                // SAFETY: the caller's map arguments name readable host data
                // of `size` bytes at `host_begin` (the OpenMP map contract).
                let copied = unsafe {
                    memory.submit(
                        target,
                        request.host_begin,
                        request.size as usize,
                        entry_name,
                    )
                };
                drop(update_guard);
                if !copied {
                    out.target = None;
                    out.failure = Some(MapFailure::SubmitFailed);
                }
            }
            (_, Some(handle)) if !out.is_host_ptr && !request.present => {
                drop(entries);
                // Wait until a copy another thread issued for this entry is done.
                drop(handle.lock_update());
            }
            _ => drop(entries),
        }
        out
    }

    /// LLVM's `getTgtPtrBegin` with count update: find the mapping of
    /// `[host_begin, host_begin+size)` and decrement (or reset) its count,
    /// deferring the final decrement (`is_last`) to
    /// [`MappingTable::dealloc_tgt_ptr`], which removes the entry
    /// atomically. Without `update_refcount` this is a plain query.
    pub fn get_tgt_ptr_begin(&self, request: &UnmapRequest) -> TgtPtrBegin {
        self.tgt_ptr_begin(request, true)
    }

    /// [`MappingTable::get_tgt_ptr_begin`] without the entry's handle
    /// (`entry` is always `None`), for callers that only ask whether and
    /// where data is mapped (`omp_target_is_present`): making a handle
    /// touches the entry's shared state, one more cache miss in a large
    /// table.
    pub fn query_tgt_ptr_begin(&self, request: &UnmapRequest) -> TgtPtrBegin {
        debug_assert!(
            !request.update_refcount,
            "a query changes no count: use get_tgt_ptr_begin"
        );
        self.tgt_ptr_begin(request, false)
    }

    fn tgt_ptr_begin(&self, request: &UnmapRequest, with_handle: bool) -> TgtPtrBegin {
        let mut entries = self.lock_entries();
        let kind = RefKind::from_hold(request.hold);
        let mut out = TgtPtrBegin::default();

        // The section at its entry's begin: one descent (`contains_section`).
        let at = entries.position(request.host_begin);
        let exact = entries
            .get_mut_at(at, request.host_begin)
            .filter(|e| contains_section(&**e, request.host_begin, request.size));
        if let Some(entry) = exact {
            unmap_found(entry, request, kind, with_handle, &mut out);
            return out;
        }
        let found = entries.lookup_with(at, request.host_begin, request.size, request.zero_length);
        if found.contained || (!request.must_contain && found.extends()) {
            let key = found.key.expect("an overlapping lookup names its entry");
            let entry = entries.get_mut(&key).expect("lookup keys exist");
            unmap_found(entry, request, kind, with_handle, &mut out);
        } else if request.unified_shared_memory {
            out.is_host_ptr = true;
            out.target = non_null(request.host_begin);
        }
        out
    }

    /// LLVM's `deallocTgtPtr`: decrement the count selected by `hold` of the
    /// mapping overlapping `[host_begin, host_begin+size)`; at a total of
    /// zero, free its device memory and remove it. Returns the removal
    /// event, if the mapping went away. `zero_length` is the rule the
    /// section was found by (a zero-length one is found again the same way).
    pub fn dealloc_tgt_ptr(
        &self,
        host_begin: usize,
        size: i64,
        hold: bool,
        zero_length: ZeroLength,
        memory: &dyn DeviceMemory,
    ) -> Result<Option<MapEvent>, MappingError> {
        let mut entries = self.lock_entries();
        let kind = RefKind::from_hold(hold);
        // The section at its entry's begin: one descent (`contains_section`).
        let at = entries.position(host_begin);
        let exact = entries
            .get_mut_at(at, host_begin)
            .filter(|e| contains_section(&**e, host_begin, size));
        let key = match exact {
            Some(entry) => {
                if entry.refs.decrement(kind) != 0 {
                    return Ok(None);
                }
                host_begin
            }
            None => {
                let found = entries.lookup_with(at, host_begin, size, zero_length);
                if !found.overlaps() {
                    return Err(MappingError::SectionNotFound { host_begin });
                }
                let key = found.key.expect("an overlapping lookup names its entry");
                let entry = entries.get_mut(&key).expect("lookup keys exist");
                if entry.refs.decrement(kind) != 0 {
                    return Ok(None);
                }
                key
            }
        };
        // At `host_begin` the search is not repeated; another key is
        // searched for.
        let entry = entries.remove_at(at, key).expect("lookup keys exist");
        // LLVM ignores the result of the device free here.
        memory.free(entry.allocation_begin());
        Ok(Some(MapEvent::Removed {
            host_begin: entry.host_begin,
            target: entry.device_begin,
            size,
            name: entry.name,
        }))
    }

    /// LLVM 15+'s `postProcessingTargetDataEnd` for one section a
    /// [`UnmapRequest::from_data_end`] query found (`found`, the query's
    /// entry, settled by identity: another lookup by address could meet a
    /// mapping made since): this thread is no longer a data-end user of the
    /// mapping; if `delete` (the caller wants it gone), its counts are zero
    /// (nobody mapped it again meanwhile) and no other data-end user is
    /// still between its query and this call, the mapping is removed, with
    /// the shadow pointers inside it, and its device memory freed. A
    /// mapping removed meanwhile by other means (`disassociate`) is left
    /// alone. Returns the removal event, if it went away; `size` is only
    /// reported in it.
    pub fn end_data_end(
        &self,
        found: &EntryHandle,
        size: i64,
        delete: bool,
        memory: &dyn DeviceMemory,
    ) -> Option<MapEvent> {
        // The lock order: shadows before entries. Only an entry a pointer
        // was attached in may hold shadows.
        let mut shadows =
            (delete && found.may_contain_attached_pointers()).then(|| self.lock_shadows());
        let mut entries = self.lock_entries();
        let key = found.host_begin();
        let at = entries.position(key);
        let entry = entries.get_mut_at(at, key).filter(|e| found.is(e))?;
        let other_users = entry.shared.remove_data_end_user();
        if !delete || entry.refs.total() != 0 || other_users != 0 {
            return None;
        }
        let entry = entries
            .remove_at(at, key)
            .expect("the entry was just found");
        drop(entries);
        if let Some(shadows) = shadows.as_mut() {
            let len = entry.host_end.wrapping_sub(entry.host_begin);
            shadows.visit_range(entry.host_begin, len, |_, _| ShadowVisit::Remove);
            self.shadow_len.store(shadows.len(), Ordering::Relaxed);
        }
        // LLVM ignores the result of the device free here.
        memory.free(entry.allocation_begin());
        Some(MapEvent::Removed {
            host_begin: entry.host_begin,
            target: entry.device_begin,
            size,
            name: entry.name,
        })
    }

    /// LLVM's `associatePtr`: map `[host_begin, host_begin+size)` to
    /// `device_begin` with an infinite count. Re-associating the same range
    /// with the same device address is a no-op; anything else at the same
    /// host begin is an error. (Like LLVM, overlaps with other mappings are
    /// not checked.)
    pub fn associate(
        &self,
        host_begin: usize,
        device_begin: usize,
        size: usize,
    ) -> Result<(), MappingError> {
        let mut entries = self.lock_entries();
        let host_end = host_begin.wrapping_add(size);
        if let Some(existing) = entries.get(&host_begin) {
            return if existing.host_end == host_end && existing.device_begin == device_begin {
                Ok(())
            } else {
                Err(MappingError::ReassociateDifferent)
            };
        }
        entries.insert(
            host_begin,
            MapEntry::new(
                host_begin,
                host_begin,
                host_end,
                device_begin,
                0,
                RefCounts::new(RefKind::Dynamic, true),
                Default::default(),
            ),
        );
        Ok(())
    }

    /// LLVM's `disassociatePtr`: remove the infinite-count mapping that
    /// starts exactly at `host_begin`.
    pub fn disassociate(&self, host_begin: usize) -> Result<(), MappingError> {
        let mut entries = self.lock_entries();
        let Some(existing) = entries.get(&host_begin) else {
            return Err(MappingError::AssociationNotFound);
        };
        if existing.refs.hold != 0 {
            Err(MappingError::DisassociateHeld)
        } else if existing.refs.is_dynamic_infinite() {
            entries.remove(&host_begin);
            Ok(())
        } else {
            Err(MappingError::DisassociateNotAssociated)
        }
    }
}
