//! LLVM 22's `keep_attached_pointers`: a copy to the device of a mapping
//! found (its count 1, or `always`) is skipped when a pointer inside the
//! section is attached, so the device pointer stays attached.

use super::*;

const S: usize = 0x20_000;

/// A 16-byte struct mapped with its pointer at `S + 8` attached.
fn struct_with_attached_pointer(t: &MappingTable, m: &FakeMemory) -> usize {
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            ..map(S, 16)
        },
        m,
    );
    let target = r.target.unwrap();
    r.entry.unwrap().set_may_contain_attached_pointers();
    let shadow = ShadowPtr {
        host_ptr_value: 0x99,
        target_ptr_addr: target + 8,
        target_ptr_value: 0x77,
    };
    assert!(t.upsert_shadow(S + 8, shadow));
    m.submits.borrow_mut().clear();
    target
}

fn remap(keep: bool, always: bool, size: i64) -> MapRequest {
    MapRequest {
        to: true,
        always,
        update_refcount: false,
        keep_attached_pointers: keep,
        ..map(S, size)
    }
}

#[test]
fn a_found_mapping_holding_an_attached_pointer_is_not_copied_again() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    let target = struct_with_attached_pointer(&t, &m);
    assert!(t.has_shadows());
    // LLVM 14/19: "new" again (count 1, update suppressed), copied again.
    let r = t.get_target_pointer(&remap(false, false, 16), &m);
    assert!(r.is_new && !r.keeps_attached_pointers);
    assert_eq!(*m.submits.borrow(), vec![(target, S, 16)]);
    m.submits.borrow_mut().clear();
    // LLVM 22: not copied, with `always` either.
    for always in [false, true] {
        let r = t.get_target_pointer(&remap(true, always, 16), &m);
        assert_eq!(r.target, Some(target));
        assert!(r.keeps_attached_pointers);
        assert!(m.submits.borrow().is_empty());
    }
    // A section without the pointer is copied.
    let r = t.get_target_pointer(&remap(true, false, 8), &m);
    assert!(!r.keeps_attached_pointers);
    assert_eq!(*m.submits.borrow(), vec![(target, S, 8)]);
}

/// A shadow left in the map after its mapping went away does not stop the
/// copy of a mapping made anew there.
#[test]
fn a_new_mapping_is_copied_whatever_shadows_remain() {
    let t = MappingTable::new();
    let m = FakeMemory::new();
    struct_with_attached_pointer(&t, &m);
    let r = release(&t, &m, unmap(S, 16));
    assert!(r.is_last);
    assert!(t.is_empty() && t.has_shadows());
    let r = t.get_target_pointer(
        &MapRequest {
            to: true,
            keep_attached_pointers: true,
            ..map(S, 16)
        },
        &m,
    );
    assert!(r.is_new && !r.keeps_attached_pointers);
    assert_eq!(m.submits.borrow().len(), 1);
}
