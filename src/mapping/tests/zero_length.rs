//! Zero-length sections under each release's rule ([`ZeroLength`]): a
//! pointer whose data was mapped as a section that does not start at it
//! (`map(to: p[64:128])`, then `use_device_ptr(p)` or `p` captured by a
//! region) is found by that mapping's base from LLVM 15 on, not in 14.

use super::*;

/// `p[64:128]` of floats: the section starts 256 bytes past the pointer.
const P: usize = 0x10_000;
const BEGIN: usize = P + 256;
const SIZE: i64 = 512;

fn map_section(t: &MappingTable, m: &FakeMemory) -> usize {
    let r = t.get_target_pointer(
        &MapRequest {
            host_base: P,
            ..map(BEGIN, SIZE)
        },
        m,
    );
    r.target.expect("mapped")
}

fn pointer_query(rule: ZeroLength) -> UnmapRequest {
    UnmapRequest {
        zero_length: rule,
        must_contain: false,
        update_refcount: false,
        ..unmap(P, 0)
    }
}

#[test]
fn a_pointer_below_its_section_is_found_by_the_base_from_llvm15() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let target = map_section(&t, &m);
    for rule in [ZeroLength::ExtendedBelowBase, ZeroLength::Extended] {
        let r = t.get_tgt_ptr_begin(&pointer_query(rule));
        // The device address of the pointer's value, 256 bytes before the
        // device copy of the section.
        assert_eq!(r.target, Some(target - 256), "{rule:?}");
        assert_eq!(r.entry.map(|e| e.host_begin()), Some(BEGIN));
    }
    let r = t.get_tgt_ptr_begin(&pointer_query(ZeroLength::Section));
    assert_eq!(r.target, None);
    // Below the base, or with a length, nothing matches under any rule.
    for rule in [ZeroLength::ExtendedBelowBase, ZeroLength::Extended] {
        let below = UnmapRequest {
            host_begin: P - 1,
            ..pointer_query(rule)
        };
        assert_eq!(t.get_tgt_ptr_begin(&below).target, None);
        let sized = UnmapRequest {
            size: 4,
            must_contain: true,
            ..pointer_query(rule)
        };
        assert_eq!(t.get_tgt_ptr_begin(&sized).target, None);
    }
}

/// `use_device_ptr(p)` and an implicit capture of `p` map it with length
/// zero: the mapping found is counted and released like any other.
#[test]
fn a_zero_length_map_counts_on_the_section_found_by_base() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let target = map_section(&t, &m);
    let r = t.get_target_pointer(
        &MapRequest {
            implicit: true,
            zero_length: ZeroLength::Extended,
            ..map(P, 0)
        },
        &m,
    );
    assert_eq!(r.target, Some(target - 256));
    assert!(!r.is_new);
    assert!(matches!(
        r.event,
        Some(MapEvent::Exists {
            action: RefAction::Incremented,
            ..
        })
    ));
    assert_eq!(refs_of(&t, BEGIN).dynamic, 2);
    let r = release(
        &t,
        &m,
        UnmapRequest {
            zero_length: ZeroLength::Extended,
            ..unmap(P, 0)
        },
    );
    assert_eq!(r.target, Some(target - 256));
    assert_eq!(refs_of(&t, BEGIN).dynamic, 1);
    // LLVM 14's rule finds nothing: no count changes, nothing is created.
    let r = t.get_target_pointer(&map(P, 0), &m);
    assert_eq!(r.target, None);
    assert_eq!(t.len(), 1);
    assert_eq!(refs_of(&t, BEGIN).dynamic, 1);
}

/// `target exit data map(delete: p[:0])`: the last reference goes, and the
/// deallocation finds the mapping by the same rule (LLVM 19 frees the entry
/// it found; a lookup under LLVM 14's rule would miss it).
#[test]
fn a_zero_length_delete_frees_the_section_found_by_base() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    map_section(&t, &m);
    let delete = UnmapRequest {
        force_delete: true,
        zero_length: ZeroLength::ExtendedBelowBase,
        ..unmap(P, 0)
    };
    let r = t.get_tgt_ptr_begin(&delete);
    assert!(r.is_last);
    assert!(matches!(
        t.dealloc_tgt_ptr(P, 0, false, ZeroLength::Section, &m),
        Err(MappingError::SectionNotFound { .. })
    ));
    let removed = t
        .dealloc_tgt_ptr(P, 0, false, ZeroLength::ExtendedBelowBase, &m)
        .unwrap();
    assert!(matches!(
        removed,
        Some(MapEvent::Removed {
            host_begin: BEGIN,
            ..
        })
    ));
    assert!(t.is_empty());
    assert!(m.live.borrow().is_empty());
}

/// The store reads the neighbours' bases across chunk boundaries: many
/// sections, each mapped through a pointer 16 bytes before it, each found
/// from its pointer.
#[test]
fn every_pointer_finds_its_section_across_chunks() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let pointers: Vec<usize> = (0..300).map(|i| 0x100_000 + i * 64).collect();
    let targets: Vec<usize> = pointers
        .iter()
        .map(|&p| {
            let r = t.get_target_pointer(
                &MapRequest {
                    host_base: p,
                    ..map(p + 16, 32)
                },
                &m,
            );
            r.target.unwrap()
        })
        .collect();
    for (&p, &target) in pointers.iter().zip(&targets) {
        for rule in [ZeroLength::ExtendedBelowBase, ZeroLength::Extended] {
            let r = t.get_tgt_ptr_begin(&UnmapRequest {
                host_begin: p,
                ..pointer_query(rule)
            });
            assert_eq!(r.target, Some(target - 16), "{p:#x} {rule:?}");
            // Inside a section: that section.
            let r = t.get_tgt_ptr_begin(&UnmapRequest {
                host_begin: p + 20,
                ..pointer_query(rule)
            });
            assert_eq!(r.target, Some(target + 4), "{p:#x} {rule:?}");
            // Past a section's end, below the next base: nothing.
            let r = t.get_tgt_ptr_begin(&UnmapRequest {
                host_begin: p + 48,
                ..pointer_query(rule)
            });
            assert_eq!(r.target, None, "{p:#x} {rule:?}");
        }
    }
}
