//! Where a host section `[begin, begin+size)` falls relative to the mapped
//! ranges (LLVM's `lookupMapping`): inside one, overlapping the start of the
//! next one, or running past the end of one.
//!
//! Only the two neighbours of `begin` among the ranges ordered by begin
//! are examined (the last range starting at or before `begin`, and the
//! first starting after it): [`classify`] decides from them. The table's
//! store finds both with one search (O(log n), `store.rs`); [`lookup`]
//! finds them in a `BTreeMap` of begin -> end, the reference the store is
//! tested against.

#[cfg(test)]
use std::collections::BTreeMap;
#[cfg(test)]
use std::ops::Bound;

/// What a lookup found. `key` names the entry the flags describe (the left
/// neighbour, or the right one when the left one neither contains nor is
/// extended by the section); it is set even when no flag is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupResult {
    /// The section lies inside the entry.
    pub contained: bool,
    /// The section starts before the entry and runs into it.
    pub extends_before: bool,
    /// The section starts inside (or before) the entry and runs past its end.
    pub extends_after: bool,
    /// Host begin address of the entry examined last.
    pub key: Option<usize>,
}

impl LookupResult {
    /// Does the section overlap the entry at all?
    pub fn overlaps(&self) -> bool {
        self.contained || self.extends_before || self.extends_after
    }

    /// Does the section overlap the entry without being contained in it?
    pub(crate) fn extends(&self) -> bool {
        self.extends_before || self.extends_after
    }
}

/// How a zero-length section (a pointer's value: `use_device_ptr`,
/// `use_device_addr`, an implicitly captured pointer, an ATTACH entry's
/// pointee) is matched against the mappings. A pointer whose data was
/// mapped as a section that does not start at it (`map(p[64:128])`, then
/// `p` itself) lies outside that mapping, before its begin, but at or
/// after its base (the pointer value the section was mapped through):
/// LLVM 15 and later take that as a match (OpenMP 5.1, "Pointer
/// Initialization for Device Data Environments"); LLVM 14 does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ZeroLength {
    /// LLVM 14: as any section, it matches only the mapping it lies in.
    #[default]
    Section,
    /// LLVM 15 to 19: it matches the last mapping starting at or before
    /// it if it lies before that one's end or before that one's base, else
    /// the first mapping starting after it if its base is at or before it.
    ExtendedBelowBase,
    /// LLVM 20 and later: as LLVM 19, without the left neighbour's base
    /// test (a section lying wholly before its base is not matched from
    /// between its end and its base).
    Extended,
}

/// The half-open host range of something stored in the map.
pub trait HostRange {
    fn host_begin(&self) -> usize;
    fn host_end(&self) -> usize;
}

/// Does `entry` contain the section `[begin, begin+size)`? For the entry
/// keyed exactly `begin`, this is [`lookup`]'s whole answer: the entry it
/// examines first is the last one starting at or before `begin`, this one,
/// and a contained section stops it there ([`contained_in`]). So a caller
/// holding that entry from one `get`/`get_mut` descent skips the range
/// probes and the second descent: the common case of a section mapped
/// before and found again (an exit, a presence check, a region over mapped
/// data).
pub fn contains_section<E: HostRange>(entry: &E, begin: usize, size: i64) -> bool {
    range_contains(entry.host_begin(), entry.host_end(), begin, size)
}

/// Does `[host_begin, host_end)` contain the section `[begin, begin+size)`?
fn range_contains(host_begin: usize, host_end: usize, begin: usize, size: i64) -> bool {
    let end = begin.wrapping_add(size as usize);
    begin >= host_begin && begin < host_end && end <= host_end
}

/// [`lookup`]'s result for a section contained in the entry keyed `key`.
pub fn contained_in(key: usize) -> LookupResult {
    LookupResult {
        contained: true,
        key: Some(key),
        ..LookupResult::default()
    }
}

/// LLVM's lookupMapping over the ranges mapped, keyed by host begin
/// address with the host end as value (the reference the table's own
/// store is tested against). Address arithmetic wraps as `uintptr_t`
/// arithmetic does in C.
#[cfg(test)]
pub fn lookup(ranges: &BTreeMap<usize, usize>, begin: usize, size: i64) -> LookupResult {
    let left = ranges.range(..=begin).next_back().map(|(&b, &e)| (b, e));
    classify(begin, size, left, || {
        ranges
            .range((Bound::Excluded(begin), Bound::Unbounded))
            .next()
            .map(|(&b, &e)| (b, e))
    })
}

/// LLVM's lookupMapping from the two neighbours of `begin`: `left`, the
/// (begin, end) of the last range starting at or before `begin`, and
/// `right()`, the first one starting after it (asked for only when the
/// left one decides nothing).
pub fn classify(
    begin: usize,
    size: i64,
    left: Option<(usize, usize)>,
    right: impl FnOnce() -> Option<(usize, usize)>,
) -> LookupResult {
    let end = begin.wrapping_add(size as usize);
    let mut result = LookupResult::default();

    if let Some((key, host_end)) = left {
        result.key = Some(key);
        result.contained = range_contains(key, host_end, begin, size);
        result.extends_after = begin < host_end && end > host_end;
    }

    if !(result.contained || result.extends_after) {
        if let Some((key, host_end)) = right() {
            result.key = Some(key);
            result.extends_before = begin < key && end > key;
            result.extends_after = begin < host_end && end > host_end;
        }
    }
    result
}

/// LLVM 15+'s `lookupMapping` of a zero-length section at `begin` under
/// `rule` (not [`ZeroLength::Section`], which is [`classify`]'s answer):
/// `left` is the (begin, end, base) of the last range starting at or
/// before `begin`, `right()` the (begin, base) of the first one starting
/// after it. A match is reported as `contained` (LLVM sets no extension
/// flag for zero lengths); `key` names the entry examined last.
pub fn classify_zero_length(
    begin: usize,
    rule: ZeroLength,
    left: Option<(usize, usize, usize)>,
    right: impl FnOnce() -> Option<(usize, usize)>,
) -> LookupResult {
    let mut result = LookupResult::default();
    if let Some((key, host_end, host_base)) = left {
        result.key = Some(key);
        result.contained =
            begin < host_end || (rule == ZeroLength::ExtendedBelowBase && begin < host_base);
    }
    if !result.contained {
        if let Some((key, host_base)) = right() {
            result.key = Some(key);
            result.contained = begin >= host_base;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R(usize, usize);
    impl HostRange for R {
        fn host_begin(&self) -> usize {
            self.0
        }
        fn host_end(&self) -> usize {
            self.1
        }
    }

    fn map(ranges: &[(usize, usize)]) -> BTreeMap<usize, usize> {
        ranges.iter().copied().collect()
    }

    #[test]
    fn empty_map_finds_nothing() {
        let m = map(&[]);
        assert_eq!(lookup(&m, 100, 8), LookupResult::default());
    }

    #[test]
    fn contained_sections() {
        let m = map(&[(100, 200)]);
        let r = lookup(&m, 100, 100);
        assert!(r.contained && !r.extends());
        assert_eq!(r.key, Some(100));
        assert!(lookup(&m, 150, 10).contained);
        // Zero length inside is contained; at the end it is not.
        assert!(lookup(&m, 199, 0).contained);
        let at_end = lookup(&m, 200, 0);
        assert!(!at_end.overlaps());
    }

    #[test]
    fn extends_after_end() {
        let m = map(&[(100, 200)]);
        let r = lookup(&m, 150, 100);
        assert!(!r.contained && r.extends_after && !r.extends_before);
        assert_eq!(r.key, Some(100));
    }

    #[test]
    fn extends_before_begin() {
        let m = map(&[(100, 200)]);
        let r = lookup(&m, 50, 60);
        assert!(r.extends_before && !r.extends_after && !r.contained);
        assert_eq!(r.key, Some(100));
        // Covering the whole entry sets both flags.
        let r = lookup(&m, 50, 200);
        assert!(r.extends_before && r.extends_after);
    }

    #[test]
    fn disjoint_section_reports_the_right_neighbour_without_flags() {
        let m = map(&[(100, 200), (300, 400)]);
        let r = lookup(&m, 250, 10);
        assert!(!r.overlaps());
        assert_eq!(r.key, Some(300));
        let r = lookup(&m, 500, 10);
        assert!(!r.overlaps());
        assert_eq!(r.key, Some(300));
    }

    /// The exact-key fast path gives `lookup`'s answer whenever it applies,
    /// for every section starting at an entry's begin (empty entries and
    /// zero-length sections included).
    #[test]
    fn a_contained_section_at_an_entry_begin_is_the_lookup_answer() {
        let m = map(&[
            (0, 0),
            (100, 200),
            (200, 200),
            (300, 400),
            (usize::MAX - 8, usize::MAX),
        ]);
        for (&key, &end) in &m {
            let entry = R(key, end);
            for size in [0i64, 1, 50, 99, 100, 101, 1000, -1] {
                if contains_section(&entry, key, size) {
                    assert_eq!(contained_in(key), lookup(&m, key, size), "{key} {size}");
                } else {
                    assert!(!lookup(&m, key, size).contained, "{key} {size}");
                }
            }
        }
    }

    /// A pointer below the section mapped through it (`map(p[64:128])`,
    /// then `p`) matches that mapping from LLVM 15 on, not in LLVM 14; a
    /// pointer inside a mapping matches it under every rule.
    #[test]
    fn zero_length_sections_match_by_the_next_mapping_base() {
        // One mapping [164, 292) mapped through the pointer 100.
        let right = || Some((164, 100));
        for rule in [ZeroLength::ExtendedBelowBase, ZeroLength::Extended] {
            let r = classify_zero_length(100, rule, None, right);
            assert_eq!(r, contained_in(164), "{rule:?}");
            let r = classify_zero_length(120, rule, Some((0, 50, 0)), right);
            assert_eq!(r, contained_in(164), "{rule:?}");
            // Below the base: not a match, the right neighbour named.
            let r = classify_zero_length(99, rule, Some((0, 50, 0)), right);
            assert!(!r.overlaps() && r.key == Some(164), "{rule:?}");
            // Inside the left neighbour.
            let r = classify_zero_length(40, rule, Some((0, 50, 0)), right);
            assert_eq!(r, contained_in(0), "{rule:?}");
        }
        let m = map(&[(164, 292)]);
        assert!(!lookup(&m, 100, 0).overlaps());
    }

    /// LLVM 19 also matches the left neighbour from between its end and its
    /// base (a section mapped wholly below its pointer, `p[-10:5]`); LLVM
    /// 22 dropped that test.
    #[test]
    fn only_llvm19_matches_below_the_left_neighbour_base() {
        let left = Some((100, 120, 200));
        let r = classify_zero_length(150, ZeroLength::ExtendedBelowBase, left, || None);
        assert_eq!(r, contained_in(100));
        let r = classify_zero_length(150, ZeroLength::Extended, left, || None);
        assert!(!r.overlaps() && r.key == Some(100));
    }

    #[test]
    fn section_ending_exactly_at_next_begin_does_not_overlap() {
        let m = map(&[(100, 200)]);
        assert!(!lookup(&m, 90, 10).overlaps());
        assert!(lookup(&m, 90, 11).extends_before);
    }
}
