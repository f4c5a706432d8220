//! A registered library's offload entries, read in the layout its compiler
//! wrote, as the runtime's one (32-byte, LLVM 14) form.
//!
//! clang up to 19 writes 32-byte entries (`omp_offloading_entries`); clang
//! 20+ writes 56-byte ones (`llvm_offload_entries`) that begin with a zero
//! word and a version. The layout is decided for each table on its own,
//! never once per process: a clang-14 program may dlopen a clang-22
//! library. Everything past registration (translation tables, the image
//! copies plugins read, ctor/dtor lists) sees only [`OffloadEntry`] values.
//!
//! clang 19+ also pass the binary's `requires` flags as an entry with the
//! `REGISTER_REQUIRES` flag instead of calling `__tgt_register_requires`;
//! such entries name no device symbol, so they are taken out of the list
//! and returned as `Entries::requires`.

use omptarget::abi::{declare_target, OffloadEntry, OffloadEntryV1, OffloadEntryV2};
use std::ffi::c_void;
use std::mem::size_of;

/// Which entry layout a table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryLayout {
    /// 32-byte `__tgt_offload_entry` (clang 14 to 19).
    V1,
    /// 56-byte entries with a leading zero word and `version` 1 (clang 20+).
    V2,
}

/// The entries of one table, in the runtime's form.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    /// The layout the table was written in (`None` for an empty table).
    pub layout: Option<EntryLayout>,
    /// Every entry but the `requires` ones, in table order, as 32-byte
    /// entries (names still point into the library).
    pub entries: Vec<OffloadEntry>,
    /// The `requires` flags the table carries (clang 19+), one per
    /// `REGISTER_REQUIRES` entry, in table order.
    pub requires: Vec<i64>,
}

/// Tell the layout of a non-empty table of `len` bytes starting at `begin`.
///
/// A 56-byte entry starts with a zero word, then `version` and `kind` 1
/// (OpenMP) in the low half of the second word, and the table is a whole
/// number of 56-byte entries. clang writes `version` 1; LLVM 22 reads every
/// table whose first word is zero as 56-byte entries and never looks at
/// `version` (`upgradeLegacyEntries`), so hand-written tables with version 0
/// (LLVM's own `offloading/requires.c`) register there, and here too. A
/// 32-byte entry starts with an address, which is non-null except in a
/// clang-19 `requires` entry; its second word is then a name pointer, whose
/// low half is never `0x0001_0000` or `0x0001_0001` (clang's strings are not
/// placed at such addresses in a table that is also a whole number of
/// 56-byte entries).
///
/// # Safety
/// `begin..begin+len` is readable and 8-aligned, `len >= 16`.
unsafe fn layout_of(begin: *const u64, len: usize) -> EntryLayout {
    // SAFETY: our `# Safety`: the first two words are readable.
    let (first, second) = unsafe { (*begin, *begin.add(1)) };
    if first == 0
        && second & 0xffff_fffe == 0x0001_0000
        && len.checked_rem(size_of::<OffloadEntryV2>()) == Some(0)
    {
        EntryLayout::V2
    } else {
        EntryLayout::V1
    }
}

/// Read the table `[begin, end)`: nothing when the bounds are null,
/// reversed, misaligned or not a whole number of entries of the layout
/// found (clang's tables always are).
///
/// # Safety
/// A non-empty, aligned range is a readable table of offload entries of
/// one layout, unmutated during the call.
pub(crate) unsafe fn read(begin: *const c_void, end: *const c_void) -> Entries {
    let (b, e) = (begin as usize, end as usize);
    if begin.is_null() || end.is_null() || e <= b || b % 8 != 0 {
        return Entries::default();
    }
    let len = e - b;
    if len < 16 {
        return Entries::default();
    }
    // SAFETY: our `# Safety`: a non-empty aligned readable table.
    let layout = unsafe { layout_of(begin.cast(), len) };
    let mut out = Entries {
        layout: Some(layout),
        ..Entries::default()
    };
    let mut keep = |addr: *mut c_void, name, size: u64, flags: i32, data: u64| {
        if flags & declare_target::REGISTER_REQUIRES != 0 {
            out.requires.push(data as i64);
        } else {
            out.entries.push(OffloadEntry {
                addr,
                name,
                size: size as usize,
                flags,
                reserved: 0,
            });
        }
    };
    match layout {
        EntryLayout::V1 => {
            if len.checked_rem(size_of::<OffloadEntryV1>()) != Some(0) {
                return Entries::default();
            }
            let count = len / size_of::<OffloadEntryV1>();
            // SAFETY: our `# Safety`: `count` whole 32-byte entries,
            // aligned, readable, unmutated for this call.
            let table =
                unsafe { std::slice::from_raw_parts(begin.cast::<OffloadEntryV1>(), count) };
            for entry in table {
                // clang 19 stores the requires flags in the last word.
                keep(
                    entry.addr,
                    entry.name,
                    entry.size as u64,
                    entry.flags,
                    entry.reserved as u32 as u64,
                );
            }
        }
        EntryLayout::V2 => {
            let count = len / size_of::<OffloadEntryV2>();
            // SAFETY: as above, `count` whole 56-byte entries (checked in
            // `layout_of`).
            let table =
                unsafe { std::slice::from_raw_parts(begin.cast::<OffloadEntryV2>(), count) };
            for entry in table {
                keep(
                    entry.address,
                    entry.symbol_name,
                    entry.size,
                    entry.flags as i32,
                    entry.data,
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_char, CString};

    fn v2(address: usize, name: &CString, size: u64, flags: u32, data: u64) -> OffloadEntryV2 {
        OffloadEntryV2 {
            reserved: 0,
            version: 1,
            kind: 1,
            flags,
            address: address as *mut c_void,
            symbol_name: name.as_ptr() as *mut c_char,
            size,
            data,
            aux_addr: std::ptr::null_mut(),
        }
    }

    fn v1(addr: usize, name: &CString, size: usize, flags: i32, data: i32) -> OffloadEntryV1 {
        OffloadEntryV1 {
            addr: addr as *mut c_void,
            name: name.as_ptr() as *mut c_char,
            size,
            flags,
            reserved: data,
        }
    }

    fn read_table<T>(table: &[T]) -> Entries {
        let range = table.as_ptr_range();
        // SAFETY: a live slice of entries.
        unsafe { read(range.start.cast(), range.end.cast()) }
    }

    #[test]
    fn clang_22_entries_are_read_as_56_byte_records() {
        let (k, g, r) = (
            CString::new("kernel").unwrap(),
            CString::new("global").unwrap(),
            CString::new("").unwrap(),
        );
        let table = [
            v2(0x1000, &k, 0, 0, 0),
            v2(0x2000, &g, 8, 0, 0),
            v2(0, &r, 0, declare_target::REGISTER_REQUIRES as u32, 8),
        ];
        let got = read_table(&table);
        assert_eq!(got.layout, Some(EntryLayout::V2));
        assert_eq!(got.requires, [8]);
        let seen: Vec<_> = got
            .entries
            .iter()
            .map(|e| (e.addr as usize, e.name as usize, e.size, e.flags))
            .collect();
        assert_eq!(
            seen,
            [
                (0x1000, k.as_ptr() as usize, 0, 0),
                (0x2000, g.as_ptr() as usize, 8, 0)
            ]
        );
    }

    #[test]
    fn a_56_byte_table_of_version_0_is_read_as_llvm_22_reads_it() {
        // LLVM's offloading/requires.c writes `{0, 0, 1, REGISTER_REQUIRES,
        // ...}`: version 0, kind 1.
        let r = CString::new("").unwrap();
        let mut table = [
            v2(0, &r, 0, declare_target::REGISTER_REQUIRES as u32, 1),
            v2(0, &r, 0, declare_target::REGISTER_REQUIRES as u32, 2),
        ];
        for entry in &mut table {
            entry.version = 0;
        }
        let got = read_table(&table);
        assert_eq!(got.layout, Some(EntryLayout::V2));
        assert_eq!(got.requires, [1, 2]);
        assert!(got.entries.is_empty());
    }

    #[test]
    fn clang_19_requires_entry_with_a_null_address_is_still_32_bytes() {
        let (r, k) = (CString::new("").unwrap(), CString::new("kernel").unwrap());
        // The requires entry first: its address word is 0, like a V2 entry.
        let table = [
            v1(0, &r, 0, declare_target::REGISTER_REQUIRES, 8),
            v1(0x1000, &k, 0, 0, 0),
        ];
        let got = read_table(&table);
        assert_eq!(got.layout, Some(EntryLayout::V1));
        assert_eq!(got.requires, [8]);
        assert_eq!(got.entries.len(), 1);
        assert_eq!(got.entries[0].addr as usize, 0x1000);
    }

    #[test]
    fn clang_14_entries_keep_their_fields() {
        let k = CString::new("ctor").unwrap();
        let table = [v1(0x1000, &k, 0, declare_target::CTOR, 0)];
        let got = read_table(&table);
        assert_eq!(got.layout, Some(EntryLayout::V1));
        assert!(got.requires.is_empty());
        assert_eq!(got.entries[0].flags, declare_target::CTOR);
    }

    #[test]
    fn empty_reversed_and_ragged_tables_read_as_nothing() {
        let k = CString::new("k").unwrap();
        let table = [v1(0x1000, &k, 0, 0, 0); 2];
        let range = table.as_ptr_range();
        // SAFETY: bounds of a live table, reversed or cut short.
        unsafe {
            assert!(read(range.end.cast(), range.start.cast())
                .entries
                .is_empty());
            assert!(read(std::ptr::null(), range.end.cast()).entries.is_empty());
            let ragged = (range.end as *const u8).sub(8).cast::<c_void>();
            assert!(read(range.start.cast(), ragged).entries.is_empty());
        }
    }
}
