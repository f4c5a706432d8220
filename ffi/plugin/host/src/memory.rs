//! Device memory of a host device: `malloc`ed blocks, tracked so that a
//! bad `data_delete` is an error, not a `free` of garbage, and so that
//! `deinit_device` can release what the runtime left.

use omptarget_plugin_kit::error::{BatchFailures, PluginError, Result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::ptr::NonNull;

/// Hashes a block address so that blocks of one 4 KiB page land in one
/// window of 256 neighbouring slots, in address order, while the windows
/// of the pages start anywhere in the table (so page-aligned blocks, large
/// allocations, spread as with any hash). `malloc` hands out small blocks
/// one after the other, so a run of allocations (mapping many variables)
/// then touches the same few lines of the table instead of a random line
/// (a cache and TLB miss once the table is large) per block, and so does
/// the drain's batch, which frees by address. hashbrown takes the slot
/// from the low bits and a 7-bit tag from the top 7: the tag comes from a
/// multiplicative hash of the whole address, so blocks of one page still
/// have distinct tags. No state of its own (std's `RandomState` keeps its
/// keys in a thread-local, which in a dlopen'd library costs a glibc DTV
/// block that stays reachable after dlclose).
#[derive(Default, Clone, Copy)]
struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Not used for addresses (they hash through `write_usize`).
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = n as u64;
    }
    fn finish(&self) -> u64 {
        const TAG_BITS: u64 = !0 << 57;
        let addr = self.0;
        let slot = mix(addr >> 12).wrapping_add((addr >> 4) & 0xff);
        (mix(addr) & TAG_BITS) | (slot & !TAG_BITS)
    }
}

/// SplitMix64's finaliser: every output bit depends on every input bit
/// (one multiplication leaves the top bits of an arithmetic progression
/// of addresses too regular for distinct tags).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Live blocks by address.
type BlockMap = HashMap<usize, usize, BuildHasherDefault<BlockHasher>>;

/// How many blocks ahead [`Allocations::free_batch`] asks for the chunk
/// header `free` will read.
const PREFETCH_AHEAD: usize = 16;

/// Ask the CPU for the cache line of the malloc chunk header of `ptr` (the
/// word before the block), which `free` reads first: a batch of blocks
/// spread over the heap otherwise waits for memory (and, in a VM, for a
/// nested page walk) at every `free`. A prefetch never faults, whatever
/// the address.
#[inline]
fn prefetch_header(ptr: *mut c_void) {
    // SAFETY: SSE is part of the x86_64 baseline (the feature the
    // intrinsic needs), and a prefetch reads nothing the program sees and
    // never faults, even for an address that is not mapped.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            ptr.cast::<i8>().wrapping_sub(8),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// The live blocks of one device: address -> size requested.
#[derive(Debug, Default)]
pub struct Allocations {
    blocks: BlockMap,
    live_bytes: usize,
}

impl Allocations {
    /// `malloc` `size` bytes (at least 1, so every block has a unique
    /// address); the block is owned here until [`Self::free`].
    pub fn alloc(&mut self, size: usize) -> Result<NonNull<c_void>> {
        // SAFETY: malloc has no preconditions.
        let ptr = unsafe { libc::malloc(size.max(1)) };
        let ptr = NonNull::new(ptr).ok_or_else(|| {
            PluginError::backend(format!("out of memory allocating {size} bytes"))
        })?;
        self.blocks.insert(ptr.as_ptr() as usize, size);
        self.live_bytes += size;
        Ok(ptr)
    }

    /// Free a block [`Self::alloc`] returned; an unknown address is an
    /// error and nothing is freed.
    pub fn free(&mut self, ptr: NonNull<c_void>) -> Result<()> {
        let size = self
            .blocks
            .remove(&(ptr.as_ptr() as usize))
            .ok_or_else(|| {
                PluginError::InvalidArgument(format!(
                    "{ptr:p} was not allocated on this device, or was freed already"
                ))
            })?;
        self.live_bytes -= size;
        // SAFETY: the block came from malloc in `alloc` and was live.
        unsafe { libc::free(ptr.as_ptr()) };
        Ok(())
    }

    /// Free the blocks of `ptrs` (`__tgt_rtl_data_delete_batch`): each slot
    /// freed is set to null; an unknown, repeated or null one is left as it
    /// was and counted in the error, and nothing else happens to it.
    ///
    /// Two passes: first every block leaves the table (independent
    /// lookups, which the CPU overlaps, unlike lookups interleaved with
    /// `free`'s own memory traffic), then the blocks are freed in the
    /// order given (the runtime's drain gives them by address, the order
    /// in which `free` walks the heap best).
    pub fn free_batch(&mut self, ptrs: &mut [*mut c_void]) -> Result<()> {
        let mut failures = BatchFailures::default();
        // Indices (ascending) of the slots not freed; usually none.
        let mut kept = Vec::new();
        for (index, &ptr) in ptrs.iter().enumerate() {
            match self.blocks.remove(&(ptr as usize)) {
                Some(size) => self.live_bytes -= size,
                None => {
                    failures.add(PluginError::InvalidArgument(format!(
                        "{ptr:p} was not allocated on this device, or was freed already"
                    )));
                    kept.push(index);
                }
            }
        }
        let mut kept = kept.into_iter().peekable();
        for index in 0..ptrs.len() {
            if let Some(&ahead) = ptrs.get(index + PREFETCH_AHEAD) {
                prefetch_header(ahead);
            }
            if kept.next_if_eq(&index).is_none() {
                // SAFETY: the block came from malloc in `alloc`, was live,
                // and has just left the table (a repeat in the batch found
                // it gone and is kept).
                unsafe { libc::free(ptrs[index]) };
                ptrs[index] = std::ptr::null_mut();
            }
        }
        failures.into_result(ptrs.len())
    }

    /// Free every live block; returns (blocks, bytes) freed.
    pub fn free_all(&mut self) -> (usize, usize) {
        let freed = (self.blocks.len(), self.live_bytes);
        for (addr, _) in std::mem::take(&mut self.blocks) {
            // SAFETY: every tracked block came from malloc and is live.
            unsafe { libc::free(addr as *mut c_void) };
        }
        self.live_bytes = 0;
        freed
    }

    /// Bytes requested by live blocks.
    pub fn live_bytes(&self) -> usize {
        self.live_bytes
    }

    /// Number of live blocks.
    pub fn live_blocks(&self) -> usize {
        self.blocks.len()
    }
}

impl Drop for Allocations {
    fn drop(&mut self) {
        self.free_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_and_frees_blocks() {
        let mut a = Allocations::default();
        let p = a.alloc(100).unwrap();
        let q = a.alloc(0).unwrap();
        assert_ne!(p, q);
        assert_eq!((a.live_blocks(), a.live_bytes()), (2, 100));
        a.free(p).unwrap();
        assert!(a.free(p).is_err(), "double free is refused");
        assert_eq!(a.free_all(), (1, 0));
        assert_eq!(a.live_blocks(), 0);
    }

    fn hash(addr: usize) -> u64 {
        let mut h = BlockHasher::default();
        h.write_usize(addr);
        h.finish()
    }

    /// Blocks of one page take neighbouring slots with distinct tags;
    /// page-aligned blocks (large allocations) spread over the table.
    #[test]
    fn block_hash_keeps_a_page_together_and_spreads_pages() {
        let page = 0x7f12_3456_7000usize;
        let slots: Vec<u64> = (0..50).map(|i| hash(page + 16 + i * 80) & 0xffff).collect();
        assert!(slots
            .windows(2)
            .all(|w| w[1].wrapping_sub(w[0]) & 0xffff == 5));
        let tags: std::collections::HashSet<u64> =
            (0..50).map(|i| hash(page + 16 + i * 80) >> 57).collect();
        assert!(tags.len() > 25, "{}", tags.len());
        let spread: std::collections::HashSet<u64> = (0..4096usize)
            .map(|i| hash(0x7f00_0000_0010 + (i << 20)) & 4095)
            .collect();
        assert!(spread.len() > 2000, "{}", spread.len());
    }
}
