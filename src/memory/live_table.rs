//! One shard's table of live blocks: a flat open-addressing map from a
//! block's address to its record.
//!
//! Linear probing over a power-of-two array, at most half full, with
//! backward-shift deletion (no tombstones: a table that sees millions of
//! alloc/free pairs never degrades and never needs a rehash to clean up).
//! Every alloc inserts and every free removes, so this is the manager's
//! hottest structure: a hit is one multiplication and, at that load, one
//! or two slots read, where the general-purpose `HashMap` spent about a
//! hundred instructions per alloc+free on its control bytes, growth
//! bookkeeping and out-of-line insert.

/// Smallest capacity allocated (slots).
const MIN_CAPACITY: usize = 16;

/// One slot: `addr` 0 is empty (address 0 itself lives in `zero`).
#[derive(Clone, Copy)]
struct Slot<V> {
    addr: usize,
    value: V,
}

/// A map from non-null addresses (0 is allowed too, kept aside) to `V`.
pub(super) struct LiveTable<V> {
    slots: Box<[Slot<V>]>,
    /// Entries in `slots` (not counting `zero`).
    len: usize,
    /// The entry of address 0: no allocator should hand it out, but the
    /// table must not mistake it for an empty slot if one does.
    zero: Option<V>,
    /// `V` of an empty slot (never read as an entry).
    filler: V,
}

impl<V: Copy> LiveTable<V> {
    /// An empty table; allocates nothing until the first insert.
    pub(super) fn new(filler: V) -> Self {
        LiveTable {
            slots: Box::new([]),
            len: 0,
            zero: None,
            filler,
        }
    }

    /// The slot where the probe for `addr` starts: the top bits of a
    /// multiplicative hash. The multiplier differs from the one that picks
    /// the shard (`shard_of`), so the keys of one shard, which agree on
    /// those bits, still spread over the whole table.
    #[inline]
    fn home(&self, addr: usize) -> usize {
        let bits = self.slots.len().trailing_zeros();
        let h = (addr as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        // `bits` >= 4 whenever this is called (the table is not empty).
        (h >> (64 - bits)) as usize
    }

    /// The index of `addr`'s slot, if present (`addr` != 0, table not empty).
    #[inline]
    fn find(&self, addr: usize) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        loop {
            let slot_addr = self.slots[i].addr;
            if slot_addr == addr {
                return Some(i);
            }
            if slot_addr == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Number of entries (the manager counts its live ones itself: cached
    /// blocks' entries are entries too).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len + usize::from(self.zero.is_some())
    }

    /// The value at `addr`.
    pub(super) fn get(&self, addr: usize) -> Option<&V> {
        if addr == 0 {
            return self.zero.as_ref();
        }
        if self.len == 0 {
            return None;
        }
        self.find(addr).map(|i| &self.slots[i].value)
    }

    /// The value at `addr`, to change in place.
    #[inline]
    pub(super) fn get_mut(&mut self, addr: usize) -> Option<&mut V> {
        if addr == 0 {
            return self.zero.as_mut();
        }
        if self.len == 0 {
            return None;
        }
        self.find(addr).map(|i| &mut self.slots[i].value)
    }

    /// Insert or replace; returns the value replaced.
    #[inline]
    pub(super) fn insert(&mut self, addr: usize, value: V) -> Option<V> {
        if addr == 0 {
            return self.zero.replace(value);
        }
        // At most half full: short probes, and always an empty slot to end
        // one.
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(addr);
        loop {
            let slot = &mut self.slots[i];
            if slot.addr == addr {
                return Some(std::mem::replace(&mut slot.value, value));
            }
            if slot.addr == 0 {
                *slot = Slot { addr, value };
                self.len += 1;
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remove `addr`'s entry and return its value.
    #[inline]
    pub(super) fn remove(&mut self, addr: usize) -> Option<V> {
        if addr == 0 {
            return self.zero.take();
        }
        if self.len == 0 {
            return None;
        }
        let hole = self.find(addr)?;
        let value = self.slots[hole].value;
        self.remove_at(hole);
        Some(value)
    }

    /// Let `f` see `addr`'s value (and change it in place) in one probe:
    /// `f` answers what to return and whether to remove the entry. `None`
    /// if `addr` has no entry.
    #[inline]
    pub(super) fn update_or_remove<R>(
        &mut self,
        addr: usize,
        f: impl FnOnce(&mut V) -> (R, bool),
    ) -> Option<R> {
        if addr == 0 {
            let (answer, remove) = f(self.zero.as_mut()?);
            if remove {
                self.zero = None;
            }
            return Some(answer);
        }
        if self.len == 0 {
            return None;
        }
        let i = self.find(addr)?;
        let (answer, remove) = f(&mut self.slots[i].value);
        if remove {
            self.remove_at(i);
        }
        Some(answer)
    }

    /// Empty the slot `hole` (an entry's).
    #[inline]
    fn remove_at(&mut self, mut hole: usize) {
        // Backward shift: move each later entry of the run into the hole
        // unless the hole lies before its home (cyclically), so every
        // entry stays reachable from its home without tombstones.
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let next = self.slots[j].addr;
            if next == 0 {
                break;
            }
            let home = self.home(next);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole].addr = 0;
        self.len -= 1;
    }

    /// Every entry, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, &V)> {
        self.zero.iter().map(|v| (0, v)).chain(
            self.slots
                .iter()
                .filter(|s| s.addr != 0)
                .map(|s| (s.addr, &s.value)),
        )
    }

    #[cold]
    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(MIN_CAPACITY);
        let empty = Slot {
            addr: 0,
            value: self.filler,
        };
        let old = std::mem::replace(&mut self.slots, vec![empty; capacity].into_boxed_slice());
        let mask = capacity - 1;
        for slot in old.iter().filter(|s| s.addr != 0) {
            let mut i = self.home(slot.addr);
            while self.slots[i].addr != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = *slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_hash_map_under_random_inserts_and_removes() {
        // Addresses drawn from a small range so that runs collide, wrap
        // around the end of the array and get shifted back on removal.
        let mut table = LiveTable::new(0u64);
        let mut model: HashMap<usize, u64> = HashMap::new();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..200_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let addr = (seed % 3000) as usize * 16;
            match (seed >> 32) % 3 {
                0 | 1 if !(seed >> 40).is_multiple_of(4) || model.len() < 500 => {
                    assert_eq!(table.insert(addr, step), model.insert(addr, step));
                }
                _ => assert_eq!(table.remove(addr), model.remove(&addr)),
            }
            assert_eq!(table.len(), model.len());
            if step % 10_000 == 0 {
                for (&a, v) in &model {
                    assert_eq!(table.get(a), Some(v));
                }
                let mut all: Vec<(usize, u64)> = table.iter().map(|(a, v)| (a, *v)).collect();
                all.sort_unstable();
                let mut expected: Vec<(usize, u64)> = model.iter().map(|(a, v)| (*a, *v)).collect();
                expected.sort_unstable();
                assert_eq!(all, expected);
            }
        }
        // Empty it: every entry still found on the way down.
        let keys: Vec<usize> = model.keys().copied().collect();
        for a in keys {
            assert_eq!(table.remove(a), model.remove(&a));
        }
        assert_eq!(table.len(), 0);
        assert_eq!(table.iter().count(), 0);
    }

    #[test]
    fn address_zero_is_an_entry_not_an_empty_slot() {
        let mut table = LiveTable::new(0u8);
        assert_eq!(table.get(0), None);
        assert_eq!(table.remove(0), None);
        assert_eq!(table.insert(0, 1), None);
        assert_eq!(table.insert(16, 2), None);
        assert_eq!(table.len(), 2);
        assert_eq!(table.get(0), Some(&1));
        assert_eq!(table.insert(0, 3), Some(1));
        assert_eq!(table.remove(0), Some(3));
        assert_eq!(table.remove(0), None);
        assert_eq!(table.iter().collect::<Vec<_>>(), [(16, &2)]);
    }

    #[test]
    fn update_or_remove_changes_in_place_or_removes_in_one_call() {
        let mut table = LiveTable::new(0u8);
        assert_eq!(table.update_or_remove(64, |_| ((), true)), None);
        // Colliding keys in one run: removing one keeps the others reachable.
        for addr in [0, 16, 32, 48, 64] {
            table.insert(addr, 1);
        }
        let bump = |v: &mut u8| {
            *v += 1;
            (*v, false)
        };
        assert_eq!(table.update_or_remove(32, bump), Some(2));
        assert_eq!(table.update_or_remove(0, bump), Some(2));
        assert_eq!(table.get(32), Some(&2));
        assert_eq!(table.update_or_remove(32, |v| (*v, true)), Some(2));
        assert_eq!(table.update_or_remove(0, |v| (*v, true)), Some(2));
        assert_eq!((table.get(32), table.get(0)), (None, None));
        for addr in [16, 48, 64] {
            assert_eq!(table.get(addr), Some(&1), "{addr}");
        }
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn empty_table_answers_without_allocating() {
        let mut table = LiveTable::new(0u8);
        assert_eq!(table.get(64), None);
        assert_eq!(table.remove(64), None);
        assert_eq!(table.len(), 0);
        assert!(table.slots.is_empty());
    }
}
