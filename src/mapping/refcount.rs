//! The two reference counts of a mapping (OpenMP 5.1 dynamic count and the
//! `ompx_hold` count), with LLVM 14's "infinite" value for mappings that no
//! unmap may remove (`omp_target_associate_ptr`, `declare target` globals).

use std::fmt;

/// The value that means "never reaches zero".
pub const INF_REF_COUNT: u64 = u64::MAX;

/// Which of the two counts an operation acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// The standard (dynamic) reference count.
    Dynamic,
    /// The `ompx_hold` reference count.
    Hold,
}

impl RefKind {
    /// The kind selected by a map type's `ompx_hold` bit.
    pub(crate) fn from_hold(hold: bool) -> Self {
        if hold {
            RefKind::Hold
        } else {
            RefKind::Dynamic
        }
    }
}

/// Both counts of one mapping. Only the table's lock protects them, so this
/// is a plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefCounts {
    /// The dynamic (OpenMP 5.1 standard) reference count; [`INF_REF_COUNT`]
    /// never reaches zero.
    pub dynamic: u64,
    /// The `ompx_hold` reference count.
    pub hold: u64,
}

impl RefCounts {
    /// The counts of a new mapping: 1 (or INF) on the selected count, 0 on
    /// the other.
    pub fn new(kind: RefKind, infinite: bool) -> Self {
        let initial = if infinite { INF_REF_COUNT } else { 1 };
        match kind {
            RefKind::Dynamic => RefCounts {
                dynamic: initial,
                hold: 0,
            },
            RefKind::Hold => RefCounts {
                dynamic: 0,
                hold: initial,
            },
        }
    }

    fn pair_mut(&mut self, kind: RefKind) -> (&mut u64, u64) {
        match kind {
            RefKind::Dynamic => (&mut self.dynamic, self.hold),
            RefKind::Hold => (&mut self.hold, self.dynamic),
        }
    }

    fn pair(&self, kind: RefKind) -> (u64, u64) {
        match kind {
            RefKind::Dynamic => (self.dynamic, self.hold),
            RefKind::Hold => (self.hold, self.dynamic),
        }
    }

    /// Sum of both counts, INF if either is INF.
    pub fn total(&self) -> u64 {
        if self.dynamic == INF_REF_COUNT || self.hold == INF_REF_COUNT {
            INF_REF_COUNT
        } else {
            self.dynamic.saturating_add(self.hold)
        }
    }

    /// Increment one count unless it is INF (saturating below INF).
    pub(crate) fn increment(&mut self, kind: RefKind) {
        let (count, _) = self.pair_mut(kind);
        if *count != INF_REF_COUNT && *count < INF_REF_COUNT - 1 {
            *count += 1;
        }
    }

    /// Decrement one count unless it is INF or zero; returns the new total.
    pub fn decrement(&mut self, kind: RefKind) -> u64 {
        let (count, _) = self.pair_mut(kind);
        if *count != INF_REF_COUNT && *count > 0 {
            *count -= 1;
        }
        self.total()
    }

    /// Reset one count to 1 unless it is INF (so that a decrement follows).
    pub(crate) fn reset(&mut self, kind: RefKind) {
        let (count, _) = self.pair_mut(kind);
        if *count != INF_REF_COUNT {
            *count = 1;
        }
    }

    /// Would one decrement of `kind` (after a reset if `after_reset`) remove
    /// the mapping?
    pub(crate) fn decrement_removes(&self, kind: RefKind, after_reset: bool) -> bool {
        let (this, other) = self.pair(kind);
        if other > 0 {
            return false;
        }
        if after_reset {
            this != INF_REF_COUNT
        } else {
            this == 1
        }
    }

    /// Is the dynamic count INF (an associated pointer or a global)?
    pub fn is_dynamic_infinite(&self) -> bool {
        self.dynamic == INF_REF_COUNT
    }
}

/// A count printed as LLVM does: a number or `INF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefCountDisplay(pub u64);

impl fmt::Display for RefCountDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == INF_REF_COUNT {
            f.write_str("INF")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_counts_start_on_the_selected_count() {
        assert_eq!(
            RefCounts::new(RefKind::Dynamic, false),
            RefCounts {
                dynamic: 1,
                hold: 0
            }
        );
        assert_eq!(
            RefCounts::new(RefKind::Hold, false),
            RefCounts {
                dynamic: 0,
                hold: 1
            }
        );
        assert_eq!(
            RefCounts::new(RefKind::Dynamic, true).total(),
            INF_REF_COUNT
        );
    }

    #[test]
    fn inf_never_changes() {
        let mut rc = RefCounts::new(RefKind::Dynamic, true);
        rc.increment(RefKind::Dynamic);
        assert_eq!(rc.decrement(RefKind::Dynamic), INF_REF_COUNT);
        rc.reset(RefKind::Dynamic);
        assert!(rc.is_dynamic_infinite());
        assert!(!rc.decrement_removes(RefKind::Dynamic, false));
        assert!(!rc.decrement_removes(RefKind::Dynamic, true));
        // The hold count of an INF mapping can still move.
        rc.increment(RefKind::Hold);
        assert_eq!(rc.hold, 1);
    }

    #[test]
    fn decrement_stops_at_zero_and_other_count_blocks_removal() {
        let mut rc = RefCounts::new(RefKind::Dynamic, false);
        rc.increment(RefKind::Hold);
        assert!(!rc.decrement_removes(RefKind::Dynamic, false));
        assert_eq!(rc.decrement(RefKind::Dynamic), 1);
        assert_eq!(rc.decrement(RefKind::Dynamic), 1);
        assert!(rc.decrement_removes(RefKind::Hold, false));
        assert_eq!(rc.decrement(RefKind::Hold), 0);
    }

    #[test]
    fn reset_then_decrement_removes() {
        let mut rc = RefCounts::new(RefKind::Dynamic, false);
        rc.increment(RefKind::Dynamic);
        rc.increment(RefKind::Dynamic);
        assert!(!rc.decrement_removes(RefKind::Dynamic, false));
        assert!(rc.decrement_removes(RefKind::Dynamic, true));
        rc.reset(RefKind::Dynamic);
        assert_eq!(rc.decrement(RefKind::Dynamic), 0);
    }

    #[test]
    fn display_matches_llvm() {
        assert_eq!(RefCountDisplay(INF_REF_COUNT).to_string(), "INF");
        assert_eq!(RefCountDisplay(3).to_string(), "3");
    }
}
