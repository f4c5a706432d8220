//! Table semantics: reference counts, hold, INF, extend/contain lookups,
//! shadow pointers; and a property test against a linear-scan model.

use super::*;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;

/// Device memory that hands out fake addresses and records what it did.
#[derive(Default)]
struct FakeMemory {
    next: Cell<usize>,
    live: RefCell<BTreeSet<usize>>,
    submits: RefCell<Vec<(usize, usize, usize)>>,
    fail_alloc: Cell<bool>,
    fail_submit: Cell<bool>,
}

impl FakeMemory {
    fn new() -> Self {
        let m = Self::default();
        m.next.set(0x10_0000);
        m
    }
}

impl DeviceMemory for FakeMemory {
    fn alloc(&self, size: usize, _host: usize) -> Option<usize> {
        if self.fail_alloc.get() {
            return None;
        }
        let addr = self.next.get();
        self.next.set(addr + size.max(1) + 0x1000);
        self.live.borrow_mut().insert(addr);
        Some(addr)
    }
    fn free(&self, device_ptr: usize) -> bool {
        self.live.borrow_mut().remove(&device_ptr)
    }
    unsafe fn submit(&self, device_ptr: usize, host_ptr: usize, size: usize, _name: usize) -> bool {
        self.submits.borrow_mut().push((device_ptr, host_ptr, size));
        !self.fail_submit.get()
    }
}

fn map(begin: usize, size: i64) -> MapRequest {
    MapRequest {
        host_begin: begin,
        host_base: begin,
        size,
        update_refcount: true,
        ..Default::default()
    }
}

fn unmap(begin: usize, size: i64) -> UnmapRequest {
    UnmapRequest {
        host_begin: begin,
        size,
        update_refcount: true,
        must_contain: true,
        ..Default::default()
    }
}

/// Unmap like targetDataEnd: query with update, then dealloc if last.
fn release(t: &MappingTable, m: &FakeMemory, req: UnmapRequest) -> TgtPtrBegin {
    let r = t.get_tgt_ptr_begin(&req);
    if r.is_last {
        t.dealloc_tgt_ptr(req.host_begin, req.size, req.hold, req.zero_length, m)
            .unwrap();
    }
    r
}

fn refs_of(t: &MappingTable, begin: usize) -> RefCounts {
    t.entries()
        .into_iter()
        .find(|e| e.host_begin == begin)
        .expect("mapped")
        .refs
}

#[test]
fn new_mapping_allocates_and_copies_to() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(0x1000, 64)
        },
        &m,
    );
    assert!(r.is_new);
    let tgt = r.target.unwrap();
    assert_eq!(*m.submits.borrow(), vec![(tgt, 0x1000, 64)]);
    assert!(matches!(r.event, Some(MapEvent::Created { size: 64, .. })));
    assert_eq!(
        refs_of(&t, 0x1000),
        RefCounts {
            dynamic: 1,
            hold: 0
        }
    );
    // Mapping again increments, copies nothing (no always), translates.
    let r2 = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(0x1010, 16)
        },
        &m,
    );
    assert!(!r2.is_new);
    assert_eq!(r2.target, Some(tgt + 0x10));
    assert_eq!(m.submits.borrow().len(), 1);
    assert_eq!(refs_of(&t, 0x1000).dynamic, 2);
    // always copies again.
    t.get_target_pointer(
        &MapRequest {
            to: true,
            always: true,
            ..map(0x1000, 64)
        },
        &m,
    );
    assert_eq!(m.submits.borrow().len(), 2);
}

#[test]
fn refcount_release_and_dealloc() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(&map(0x1000, 8), &m);
    t.get_target_pointer(&map(0x1000, 8), &m);
    let r = release(&t, &m, unmap(0x1000, 8));
    assert!(!r.is_last);
    assert_eq!(refs_of(&t, 0x1000).dynamic, 1);
    let r = release(&t, &m, unmap(0x1000, 8));
    assert!(r.is_last);
    assert!(t.is_empty());
    assert!(m.live.borrow().is_empty());
}

#[test]
fn delete_resets_the_count() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    for _ in 0..3 {
        t.get_target_pointer(&map(0x1000, 8), &m);
    }
    let r = release(
        &t,
        &m,
        UnmapRequest {
            force_delete: true,
            ..unmap(0x1000, 8)
        },
    );
    assert!(r.is_last);
    assert!(matches!(
        r.event,
        Some(MapEvent::Found {
            action: RefAction::ResetDeferredFinalDecrement,
            ..
        })
    ));
    assert!(t.is_empty());
}

#[test]
fn hold_count_keeps_mapping_alive_against_dynamic_release_and_delete() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(
        &MapRequest {
            hold: true,
            ..map(0x1000, 8)
        },
        &m,
    );
    assert_eq!(
        refs_of(&t, 0x1000),
        RefCounts {
            dynamic: 0,
            hold: 1
        }
    );
    t.get_target_pointer(&map(0x1000, 8), &m);
    // delete on the dynamic count: not last because hold > 0.
    let r = release(
        &t,
        &m,
        UnmapRequest {
            force_delete: true,
            ..unmap(0x1000, 8)
        },
    );
    assert!(!r.is_last);
    assert_eq!(
        refs_of(&t, 0x1000),
        RefCounts {
            dynamic: 0,
            hold: 1
        }
    );
    // Dynamic release at 0 stays at 0 and does not remove.
    let r = release(&t, &m, unmap(0x1000, 8));
    assert!(!r.is_last);
    let r = release(
        &t,
        &m,
        UnmapRequest {
            hold: true,
            ..unmap(0x1000, 8)
        },
    );
    assert!(r.is_last);
    assert!(t.is_empty());
}

#[test]
fn associated_pointer_is_infinite_and_only_disassociate_removes_it() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.associate(0x2000, 0xd000, 32).unwrap();
    t.associate(0x2000, 0xd000, 32).unwrap();
    assert_eq!(
        t.associate(0x2000, 0xe000, 32),
        Err(MappingError::ReassociateDifferent)
    );
    assert_eq!(
        t.associate(0x2000, 0xd000, 16),
        Err(MappingError::ReassociateDifferent)
    );
    // Map/unmap don't touch INF.
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(0x2008, 8)
        },
        &m,
    );
    assert_eq!(r.target, Some(0xd008));
    assert!(m.submits.borrow().is_empty());
    let r = release(
        &t,
        &m,
        UnmapRequest {
            force_delete: true,
            ..unmap(0x2000, 32)
        },
    );
    assert!(!r.is_last);
    assert!(
        t.live_entries().is_empty(),
        "INF entries are not runtime-owned"
    );
    assert_eq!(t.len(), 1);
    assert_eq!(
        t.disassociate(0x2008),
        Err(MappingError::AssociationNotFound)
    );
    t.disassociate(0x2000).unwrap();
    assert!(t.is_empty());
}

#[test]
fn disassociate_refuses_held_and_ordinary_mappings() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(&map(0x1000, 8), &m);
    assert_eq!(
        t.disassociate(0x1000),
        Err(MappingError::DisassociateNotAssociated)
    );
    t.associate(0x3000, 0xd000, 8).unwrap();
    t.get_target_pointer(
        &MapRequest {
            hold: true,
            ..map(0x3000, 8)
        },
        &m,
    );
    assert_eq!(t.disassociate(0x3000), Err(MappingError::DisassociateHeld));
}

#[test]
fn explicit_extension_is_refused_implicit_is_allowed() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let first = t.get_target_pointer(&map(0x1000, 16), &m).target.unwrap();
    let r = t.get_target_pointer(&map(0x1008, 16), &m);
    assert_eq!(r.target, None);
    assert_eq!(
        r.failure,
        Some(MapFailure::ExplicitExtension {
            host_begin: 0x1008,
            size: 16,
            mapped_begin: 0x1000,
            mapped_size: 16,
            present: false
        })
    );
    // Extending before the start.
    let r = t.get_target_pointer(
        &MapRequest {
            present: true,
            ..map(0xff8, 16)
        },
        &m,
    );
    assert!(matches!(
        r.failure,
        Some(MapFailure::ExplicitExtension { present: true, .. })
    ));
    // Implicit extension maps onto the existing entry.
    let r = t.get_target_pointer(
        &MapRequest {
            implicit: true,
            ..map(0x1008, 16)
        },
        &m,
    );
    assert_eq!(r.target, Some(first + 8));
    assert_eq!(refs_of(&t, 0x1000).dynamic, 2);
    assert_eq!(t.len(), 1);
}

#[test]
fn present_requires_a_mapping() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let r = t.get_target_pointer(
        &MapRequest {
            present: true,
            ..map(0x1000, 4)
        },
        &m,
    );
    assert_eq!(
        r.failure,
        Some(MapFailure::PresentMissing {
            host_begin: 0x1000,
            size: 4
        })
    );
    assert!(t.is_empty());
}

#[test]
fn zero_length_sections_neither_allocate_nor_fail() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let r = t.get_target_pointer(&map(0x1000, 0), &m);
    assert_eq!(r.target, None);
    assert!(r.failure.is_none());
    assert!(t.is_empty());
    // Inside an existing mapping, a zero-length section translates.
    let base = t.get_target_pointer(&map(0x2000, 8), &m).target.unwrap();
    let r = t.get_target_pointer(&map(0x2004, 0), &m);
    assert_eq!(r.target, Some(base + 4));
}

#[test]
fn unified_shared_memory_uses_host_addresses_unless_close() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let usm = MapRequest {
        unified_shared_memory: true,
        to: true,
        ..map(0x1000, 8)
    };
    let r = t.get_target_pointer(&usm, &m);
    assert!(r.is_host_ptr);
    assert_eq!(r.target, Some(0x1000));
    assert!(t.is_empty() && m.submits.borrow().is_empty());
    let r = t.get_target_pointer(&MapRequest { close: true, ..usm }, &m);
    assert!(!r.is_host_ptr && r.is_new);
    assert_eq!(m.submits.borrow().len(), 1);
    // Found mappings are used even under USM.
    let r = t.get_target_pointer(&usm, &m);
    assert!(!r.is_host_ptr);
    let q = t.get_tgt_ptr_begin(&UnmapRequest {
        unified_shared_memory: true,
        ..unmap(0x5000, 8)
    });
    assert!(q.is_host_ptr);
    assert_eq!(q.target, Some(0x5000));
}

#[test]
fn failed_alloc_and_submit_give_no_pointer() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    m.fail_alloc.set(true);
    let r = t.get_target_pointer(&map(0x1000, 8), &m);
    assert_eq!(r.target, None);
    assert_eq!(r.failure, Some(MapFailure::AllocFailed { size: 8 }));
    assert!(t.is_empty());
    m.fail_alloc.set(false);
    m.fail_submit.set(true);
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(0x1000, 8)
        },
        &m,
    );
    assert_eq!(r.target, None);
    assert_eq!(r.failure, Some(MapFailure::SubmitFailed));
    assert_eq!(
        r.failure.unwrap().report(),
        Some("Copying data to device failed.")
    );
}

#[test]
fn update_suppressed_reports_new_when_total_is_one() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(&map(0x1000, 32), &m);
    let member = MapRequest {
        update_refcount: false,
        to: true,
        ..map(0x1008, 8)
    };
    let r = t.get_target_pointer(&member, &m);
    assert!(r.is_new, "allocated with its parent just now");
    assert_eq!(m.submits.borrow().len(), 1);
    t.get_target_pointer(&map(0x1000, 32), &m);
    let r = t.get_target_pointer(&member, &m);
    assert!(!r.is_new);
    assert_eq!(m.submits.borrow().len(), 1);
}

#[test]
fn must_contain_controls_extending_unmap_lookups() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(&map(0x1000, 16), &m);
    let r = t.get_tgt_ptr_begin(&unmap(0x1008, 16));
    assert_eq!(r.target, None);
    let r = t.get_tgt_ptr_begin(&UnmapRequest {
        must_contain: false,
        update_refcount: false,
        ..unmap(0x1008, 16)
    });
    assert!(r.target.is_some());
}

#[test]
fn dealloc_of_unknown_section_is_an_error() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    assert_eq!(
        t.dealloc_tgt_ptr(0x1000, 8, false, ZeroLength::Section, &m),
        Err(MappingError::SectionNotFound { host_begin: 0x1000 })
    );
}

#[test]
fn globals_are_infinite_and_skip_overlaps() {
    let t = MappingTable::new();
    assert!(t.insert_global(0x1000, 8, 0xa000, 0));
    assert!(!t.insert_global(0x1004, 8, 0xb000, 0));
    assert_eq!(t.translate(0x1004, 4), Some(0xa004));
    assert_eq!(refs_of(&t, 0x1000).dynamic, INF_REF_COUNT);
    assert!(t.remove_global(0x1000, 0xb000).is_none());
    let removed = t.remove_global(0x1000, 0xa000).expect("removed");
    assert_eq!((removed.host_begin, removed.device_begin), (0x1000, 0xa000));
    assert!(t.is_empty());
}

#[test]
fn shadow_pointers_visit_only_attached_objects_in_range() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let r = t.get_target_pointer(&map(0x1000, 32), &m);
    let handle = r.entry.unwrap();
    let shadow = ShadowPtr {
        host_ptr_value: 0x9000,
        target_ptr_addr: r.target.unwrap() + 8,
        target_ptr_value: 0xe000,
    };
    assert!(t.upsert_shadow(0x1008, shadow));
    let mut seen = 0;
    // Not marked yet: nothing visited.
    t.visit_shadows(Some(&handle), 0x1000, 32, |_, _| {
        seen += 1;
        ShadowVisit::Keep
    });
    assert_eq!(seen, 0);
    handle.set_may_contain_attached_pointers();
    t.visit_shadows(Some(&handle), 0x1000, 32, |addr, s| {
        assert_eq!((addr, *s), (0x1008, shadow));
        seen += 1;
        ShadowVisit::Remove
    });
    assert_eq!(seen, 1);
    assert_eq!(t.shadow_count(), 0);
    // Objects smaller than a pointer are skipped.
    t.upsert_shadow(0x1008, shadow);
    t.visit_shadows(Some(&handle), 0x1008, 4, |_, _| {
        seen += 1;
        ShadowVisit::Keep
    });
    assert_eq!(seen, 1);
}

#[test]
fn many_entries_lookup_by_neighbours() {
    // 100k mappings: every operation is an O(log n) search, so this stays fast
    // even in debug builds.
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let n = 100_000usize;
    for i in 0..n {
        let r = t.get_target_pointer(&map(0x10_0000 + i * 64, 32), &m);
        assert!(r.is_new);
    }
    assert_eq!(t.len(), n);
    for i in (0..n).step_by(997) {
        let begin = 0x10_0000 + i * 64;
        let (found, entry) = t.lookup(begin + 8, 8);
        assert!(found.contained);
        assert_eq!(entry.unwrap().host_begin, begin);
        let (gap, _) = t.lookup(begin + 32, 32);
        assert!(!gap.overlaps());
    }
}

mod model {
    //! A linear-scan model of the table and a property test comparing them.
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct ModelEntry {
        begin: usize,
        end: usize,
        dynamic: u64,
        hold: u64,
    }

    #[derive(Default)]
    struct Model {
        entries: Vec<ModelEntry>,
    }

    impl Model {
        /// (contained, before, after, index of the entry examined)
        fn lookup(&self, hp: usize, size: usize) -> (bool, bool, bool, Option<usize>) {
            let end = hp + size;
            let left = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.begin <= hp)
                .max_by_key(|(_, e)| e.begin)
                .map(|(i, _)| i);
            let right = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.begin > hp)
                .min_by_key(|(_, e)| e.begin)
                .map(|(i, _)| i);
            let (mut c, mut b, mut a, mut idx) = (false, false, false, None);
            if let Some(i) = left {
                let e = &self.entries[i];
                idx = Some(i);
                c = hp < e.end && end <= e.end;
                a = hp < e.end && end > e.end;
            }
            if !(c || a) {
                if let Some(i) = right {
                    let e = &self.entries[i];
                    idx = Some(i);
                    b = end > e.begin;
                    a = end > e.end;
                }
            }
            (c, b, a, idx)
        }

        fn count(e: &mut ModelEntry, hold: bool) -> &mut u64 {
            if hold {
                &mut e.hold
            } else {
                &mut e.dynamic
            }
        }

        /// Returns whether a target pointer was produced.
        fn map(&mut self, hp: usize, size: usize, implicit: bool, hold: bool) -> bool {
            let (c, b, a, idx) = self.lookup(hp, size);
            if c || ((b || a) && implicit) {
                let e = &mut self.entries[idx.unwrap()];
                let n = Self::count(e, hold);
                *n = n.saturating_add(1);
                true
            } else if b || a || size == 0 {
                false
            } else {
                self.entries.push(ModelEntry {
                    begin: hp,
                    end: hp + size,
                    dynamic: u64::from(!hold),
                    hold: u64::from(hold),
                });
                true
            }
        }

        fn unmap(&mut self, hp: usize, size: usize, hold: bool, delete: bool) -> bool {
            let (c, _, _, idx) = self.lookup(hp, size);
            if !c {
                return false;
            }
            let i = idx.unwrap();
            let e = &mut self.entries[i];
            let other = if hold { e.dynamic } else { e.hold };
            let n = Self::count(e, hold);
            if *n == u64::MAX {
                return true;
            }
            if delete {
                *n = 0;
            } else {
                *n = n.saturating_sub(1);
            }
            if *n == 0 && other == 0 {
                self.entries.remove(i);
            }
            true
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Map {
            slot: usize,
            off: usize,
            size: usize,
            implicit: bool,
            hold: bool,
        },
        Unmap {
            slot: usize,
            off: usize,
            size: usize,
            hold: bool,
            delete: bool,
        },
        Associate {
            slot: usize,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (
                0..8usize,
                0..48usize,
                0..64usize,
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(slot, off, size, implicit, hold)| Op::Map {
                    slot,
                    off,
                    size,
                    implicit,
                    hold
                }),
            (
                0..8usize,
                0..48usize,
                0..64usize,
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(slot, off, size, hold, delete)| Op::Unmap {
                    slot,
                    off,
                    size,
                    hold,
                    delete
                }),
            (0..8usize).prop_map(|slot| Op::Associate { slot }),
        ]
    }

    proptest! {
        #[test]
        fn table_matches_linear_model(ops in proptest::collection::vec(op(), 1..60)) {
            let t = MappingTable::new();
            let m = FakeMemory::new();
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Map { slot, off, size, implicit, hold } => {
                        let hp = 0x1000 + slot * 64 + off;
                        let r = t.get_target_pointer(&MapRequest {
                            implicit, hold, to: true,
                            ..map(hp, size as i64)
                        }, &m);
                        let expect = model.map(hp, size, implicit, hold);
                        prop_assert_eq!(r.target.is_some(), expect, "map {:#x}+{}", hp, size);
                    }
                    Op::Unmap { slot, off, size, hold, delete } => {
                        let hp = 0x1000 + slot * 64 + off;
                        let r = release(&t, &m, UnmapRequest {
                            hold, force_delete: delete,
                            ..unmap(hp, size as i64)
                        });
                        let expect = model.unmap(hp, size, hold, delete);
                        prop_assert_eq!(r.target.is_some(), expect, "unmap {:#x}+{}", hp, size);
                    }
                    Op::Associate { slot } => {
                        let hp = 0x1000 + slot * 64 + 200_000;
                        let ok = t.associate(hp, 0xdead_0000 + slot * 64, 16).is_ok();
                        prop_assert!(ok);
                        if !model.entries.iter().any(|e| e.begin == hp) {
                            model.entries.push(ModelEntry {
                                begin: hp, end: hp + 16, dynamic: u64::MAX, hold: 0,
                            });
                        }
                    }
                }
                let mut expect: Vec<_> = model.entries.iter()
                    .map(|e| (e.begin, e.end, e.dynamic, e.hold)).collect();
                expect.sort();
                let got: Vec<_> = t.entries().iter()
                    .map(|e| (e.host_begin, e.host_end, e.refs.dynamic, e.refs.hold)).collect();
                prop_assert_eq!(got, expect);
            }
            // Every runtime allocation still live belongs to a live mapping.
            let owned = t.live_entries().len();
            prop_assert_eq!(m.live.borrow().len(), owned);
        }
    }
}

mod data_end;
mod keep_attached;
mod zero_length;
