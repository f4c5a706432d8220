//! A hash map keyed by addresses, for the tables of live blocks that the
//! runtime's memory manager and the plugins keep.
//!
//! Addresses are already spread out, so one multiplication hashes them:
//! SipHash cost more than the rest of an alloc+free. The hasher has no
//! state of its own, unlike std's `RandomState`, whose keys live in a
//! thread-local: in a dlopen'd plugin that thread-local costs a glibc DTV
//! block that stays reachable after dlclose (valgrind shows it).
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes an address with one multiplication; the fold brings the
/// well-mixed high bits of the product down to the low bits that pick a
/// hash-table slot.
#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Not used for addresses (they hash through `write_usize`); kept
        // correct for any other key.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// A `HashMap` keyed by an address type, hashed with [`AddressHasher`].
pub type AddressMap<K, V> = HashMap<K, V, BuildHasherDefault<AddressHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_addresses_spread_over_slots() {
        // 4096 blocks 64 bytes apart land in many distinct low-bit slots
        // (a random hash fills ~2590 of 4096; the product alone, without
        // the fold, would leave the low 6 bits 0: at most 64 slots).
        let slots: std::collections::HashSet<u64> = (0..4096u64)
            .map(|i| {
                let mut h = AddressHasher::default();
                h.write_usize(0x7f00_0000_0000 + (i * 64) as usize);
                h.finish() & 4095
            })
            .collect();
        assert!(slots.len() > 1800, "{}", slots.len());
    }
}
