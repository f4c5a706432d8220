//! [`StripedCounts`]: a count of calls in flight that every thread updates
//! on its own cache line.
//!
//! One process-wide counter that every call of every thread adds to and
//! subtracts from is one cache line bouncing between cores on every call:
//! two threads launching regions scaled to 1.1x of one (BENCHMARKS.md). Here
//! each thread counts in the stripe its id hashes to; only whoever needs the
//! total (a close at exit, a fork, a plugin's deinit) sums the stripes.
//!
//! A stripe may be shared by two threads whose ids collide: still correct
//! (a thread always subtracts from the stripe it added to), only slower.

use crate::sync::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// Stripes: enough that threads rarely share one; 64 × 128 bytes.
#[cfg(not(loom))]
const STRIPES: usize = 64;
/// Two under the model: threads 1 and 3 share a stripe, 2 has its own.
#[cfg(loom)]
const STRIPES: usize = 2;

/// One counter alone on its cache lines (128 bytes: a line and the
/// adjacent-line prefetcher's pair).
#[repr(align(128))]
struct Stripe(AtomicUsize);

/// Counts kept per thread stripe; see the module docs. Every operation is
/// `SeqCst`, so that "count myself, then read a flag" on one side and "set
/// the flag, then sum" on the other never both miss each other.
pub struct StripedCounts {
    stripes: [Stripe; STRIPES],
}

impl StripedCounts {
    /// All zero (usable in a `static`).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        StripedCounts {
            stripes: [const { Stripe(AtomicUsize::new(0)) }; STRIPES],
        }
    }

    /// All zero.
    #[cfg(loom)]
    pub fn new() -> Self {
        StripedCounts {
            stripes: std::array::from_fn(|_| Stripe(AtomicUsize::new(0))),
        }
    }

    /// The stripe of the thread `me` (`pthread_self`, or any per-thread
    /// non-zero id): Fibonacci hashing spreads the aligned thread-control
    /// block addresses over the stripes.
    #[cfg(not(loom))]
    pub fn stripe_of(me: usize) -> usize {
        let hashed = (me as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (hashed >> (u64::BITS - STRIPES.trailing_zeros())) as usize
    }

    /// The stripe of the thread `me` (the model's ids are 1, 2, 3).
    #[cfg(loom)]
    pub fn stripe_of(me: usize) -> usize {
        me % STRIPES
    }

    /// Add `n` to `stripe` (a value of [`Self::stripe_of`]).
    pub fn add(&self, stripe: usize, n: usize) {
        self.stripes[stripe].0.fetch_add(n, SeqCst);
    }

    /// Take `n` from `stripe`, which the same thread added to before.
    pub fn sub(&self, stripe: usize, n: usize) {
        self.stripes[stripe].0.fetch_sub(n, SeqCst);
    }

    /// The sum of all stripes. Not one atomic snapshot: a count that moves
    /// while the stripes are read may be seen before or after its move.
    pub fn sum(&self) -> usize {
        self.stripes
            .iter()
            .fold(0, |sum, s| sum.wrapping_add(s.0.load(SeqCst)))
    }

    /// Set every stripe to zero (a fork child: the counts of threads it
    /// does not have).
    pub fn reset(&self) {
        for s in &self.stripes {
            s.0.store(0, SeqCst);
        }
    }
}

#[cfg(not(loom))]
impl Default for StripedCounts {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn stripes_are_in_range_and_spread_thread_ids() {
        let ids: Vec<usize> = std::thread::scope(|s| {
            (0..16)
                .map(|_| s.spawn(thread_id))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect()
        });
        let mut stripes: Vec<usize> = ids.iter().map(|&id| StripedCounts::stripe_of(id)).collect();
        assert!(stripes.iter().all(|&s| s < STRIPES));
        stripes.sort_unstable();
        stripes.dedup();
        // 16 live threads over 64 stripes: a hash that keeps only low or
        // high bits of their aligned addresses would put most in one.
        assert!(stripes.len() >= 8, "16 threads fell into {stripes:?}");
    }

    #[test]
    fn the_sum_is_the_sum_of_every_stripe() {
        let counts = StripedCounts::new();
        counts.add(0, 3);
        counts.add(STRIPES - 1, 1 << 31);
        counts.sub(0, 1);
        assert_eq!(counts.sum(), 2 + (1 << 31));
        counts.reset();
        assert_eq!(counts.sum(), 0);
    }

    /// A per-thread id as the shim uses (the address of a thread-local is
    /// as aligned and as spread as `pthread_self`).
    fn thread_id() -> usize {
        thread_local!(static MARK: u8 = const { 0 });
        MARK.with(|m| m as *const u8 as usize)
    }
}
