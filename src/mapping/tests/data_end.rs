//! The two-step data end (LLVM 15+: `from_data_end` queries settled by
//! `end_data_end`) and the device padding freed with its entry.

use super::*;

/// LLVM issue 54216 (`map_back_race.cpp`): thread A ends a region (the
/// last user: it will copy back and remove), and before A removes the
/// mapping, thread B maps the same data, writes it on the device and ends
/// its own region. B must see itself last too, so that its write is
/// copied back; the device copy must stay until both have settled.
#[test]
fn a_mapping_reused_between_a_data_end_and_its_settling_is_copied_back_by_the_reuser() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let created = t.get_target_pointer(&map(0x1000, 4), &m);
    assert!(created.is_new);
    let end = UnmapRequest {
        from_data_end: true,
        ..unmap(0x1000, 4)
    };
    // A: the last user; its count reaches zero now, the removal waits.
    let a = t.get_tgt_ptr_begin(&end);
    assert!(a.is_last);
    let a_entry = a.entry.unwrap();
    // B maps the data again: the device copy is reused, not sent again.
    let b_map = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(0x1000, 4)
        },
        &m,
    );
    assert!(!b_map.is_new, "B reuses the device copy A's region wrote");
    assert_eq!(b_map.target, created.target);
    assert!(
        m.submits.borrow().is_empty(),
        "nothing sent over the device copy"
    );
    // B's end: B is the last user too, so B copies its write back.
    let b = t.get_tgt_ptr_begin(&end);
    assert!(
        b.is_last,
        "B must copy back: A's copy may predate B's write"
    );
    // A settles first: B is still between its query and its settling.
    assert_eq!(t.end_data_end(&a_entry, 4, true, &m), None);
    assert_eq!(t.len(), 1);
    // B settles last and removes the mapping.
    let removed = t.end_data_end(&b.entry.unwrap(), 4, true, &m);
    assert!(matches!(removed, Some(MapEvent::Removed { .. })));
    assert_eq!(t.len(), 0);
    assert!(m.live.borrow().is_empty());
}

/// A data end that does not delete (a struct's member) still settles, and
/// a mapping another thread mapped again is not removed by the settling.
#[test]
fn a_data_end_removes_nothing_mapped_again_or_not_its_to_delete() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    t.get_target_pointer(&map(0x1000, 4), &m);
    let end = UnmapRequest {
        from_data_end: true,
        ..unmap(0x1000, 4)
    };
    let first = t.get_tgt_ptr_begin(&end);
    assert!(first.is_last);
    t.get_target_pointer(&map(0x1000, 4), &m);
    assert_eq!(t.end_data_end(&first.entry.unwrap(), 4, true, &m), None);
    assert_eq!(t.len(), 1, "mapped again meanwhile: kept");
    let second = t.get_tgt_ptr_begin(&end);
    assert!(second.is_last);
    assert_eq!(t.end_data_end(&second.entry.unwrap(), 4, false, &m), None);
    assert_eq!(t.len(), 1, "a settling that does not delete keeps it");
}

#[test]
fn device_padding_is_allocated_before_the_data_and_freed_with_it() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            device_padding: 4,
            ..map(0x1004, 12)
        },
        &m,
    );
    let allocated = *m.live.borrow().iter().next().unwrap();
    let tgt = r.target.unwrap();
    assert_eq!(tgt, allocated + 4, "the data starts after the padding");
    // Only the host section is copied, and only it is mapped.
    assert_eq!(*m.submits.borrow(), vec![(tgt, 0x1004, 12)]);
    assert!(
        !t.lookup(0x1000, 4).0.overlaps(),
        "the padding maps no host memory"
    );
    let member = t
        .lookup(0x1008, 4)
        .1
        .map(|e| e.device_begin + (0x1008 - e.host_begin));
    assert_eq!(member, Some(tgt + 4));
    let removed = t
        .dealloc_tgt_ptr(0x1004, 12, false, ZeroLength::Section, &m)
        .unwrap();
    assert!(matches!(removed, Some(MapEvent::Removed { target, .. }) if target == tgt));
    assert!(
        m.live.borrow().is_empty(),
        "the allocation's own address was freed"
    );
}
