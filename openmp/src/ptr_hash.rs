//! A cheap hasher for the registry's maps keyed by addresses and thread
//! numbers (host entry address -> table, trip counts per thread).
//!
//! std's default `SipHash` costs a few hundred instructions per lookup and
//! defends against keys chosen by an attacker; these keys are addresses of
//! the program's own offload entries and libomp's thread numbers, so one
//! folded multiply (the product's high half XORed into its low half, as
//! foldhash and ahash do) is enough. Folding matters for pointers: their
//! low bits are zero by alignment and a plain multiply would keep them zero,
//! while `hashbrown` picks the bucket from the low bits.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// `2^64 / phi`, odd: every key gets a distinct product.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Hasher for integer keys; see the module docs.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PtrHasher {
    hash: u64,
}

impl PtrHasher {
    fn mix(&mut self, word: u64) {
        let product = u128::from(self.hash ^ word) * u128::from(MULTIPLIER);
        self.hash = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.hash
    }
    /// Other key types (not used by the registry) still hash correctly,
    /// one mix per 8 bytes.
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }
    fn write_i32(&mut self, n: i32) {
        self.mix(u64::from(n as u32));
    }
    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

/// A `HashMap` hashed with [`PtrHasher`].
pub(crate) type PtrMap<K, V> = HashMap<K, V, BuildHasherDefault<PtrHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::{BuildHasher, Hash};

    fn hash_of<T: Hash>(value: T) -> u64 {
        BuildHasherDefault::<PtrHasher>::default().hash_one(value)
    }

    #[test]
    fn aligned_pointers_spread_over_the_low_bits() {
        // 4096 entry addresses 64 bytes apart: a table of 4096 buckets
        // indexed by the low 12 bits should see most of them distinct.
        let buckets: HashSet<u64> = (0..4096usize)
            .map(|i| hash_of(0x5555_0000_0000usize + i * 64) & 0xfff)
            .collect();
        assert!(buckets.len() > 2400, "only {} buckets used", buckets.len());
    }

    #[test]
    fn map_finds_what_it_holds() {
        let mut map: PtrMap<usize, u32> = PtrMap::default();
        for i in 0..1000usize {
            map.insert(i * 16, i as u32);
        }
        for i in 0..1000usize {
            assert_eq!(map.get(&(i * 16)), Some(&(i as u32)));
            assert_eq!(map.get(&(i * 16 + 8)), None);
        }
        let mut threads: PtrMap<i32, u64> = PtrMap::default();
        threads.insert(-1, 7);
        threads.insert(3, 9);
        assert_eq!(threads.remove(&-1), Some(7));
        assert_eq!(threads.get(&3), Some(&9));
    }

    #[test]
    fn byte_writes_distinguish_keys() {
        assert_ne!(hash_of("a"), hash_of("b"));
        assert_ne!(hash_of([1u8; 9]), hash_of([1u8; 10]));
    }
}
