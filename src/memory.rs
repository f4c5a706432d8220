//! A per-device caching allocator for small blocks, in front of the plugin's
//! `data_alloc`/`data_delete`, with the semantics of LLVM 14's
//! `MemoryManager.h`:
//!
//! * requests of at most `threshold` bytes are *managed*: freeing one puts it
//!   on a free list (bucketed by the power of two below its size) instead of
//!   returning it to the device, and a later request of exactly the same
//!   size takes it back;
//! * larger requests go straight to the device;
//! * when the device fails an allocation, every cached block is returned to
//!   it and the allocation is retried once;
//! * a threshold of 0 disables caching (everything goes straight through).
//!
//! The manager is generic over [`DeviceAllocator`] so it can be tested
//! without a plugin; a device uses its plugin's entries.
use crate::{abi::AllocKind, DevicePtr, Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Default threshold (bytes), as LLVM's: 8 KiB.
pub const DEFAULT_THRESHOLD: usize = 1 << 13;

/// Upper bounds of the buckets: 0, then powers of two from 4 to 8 KiB.
const BUCKET_SIZES: [usize; 13] = [
    0,
    1 << 2,
    1 << 3,
    1 << 4,
    1 << 5,
    1 << 6,
    1 << 7,
    1 << 8,
    1 << 9,
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
];

/// Where the manager gets memory from and returns it to.
pub trait DeviceAllocator {
    /// Allocate `size` (> 0) bytes. [`Error::OutOfMemory`] tells the manager
    /// that freeing its cache may help; any other error is passed on as is.
    fn allocate(&self, size: usize, host_ptr: *mut c_void, kind: AllocKind) -> Result<DevicePtr>;
    /// Return memory that [`DeviceAllocator::allocate`] gave.
    fn free(&self, ptr: DevicePtr) -> Result<()>;
    /// The device number errors name.
    fn device_number(&self) -> usize {
        0
    }
}

/// What the manager holds right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// The caching threshold (0: disabled).
    pub threshold: usize,
    /// Blocks on the free lists, kept for reuse.
    pub cached_blocks: usize,
    /// Bytes on the free lists.
    pub cached_bytes: usize,
    /// Managed blocks handed out and not yet freed.
    pub live_blocks: usize,
    /// Bytes of managed blocks handed out and not yet freed.
    pub live_bytes: usize,
}

/// What [`MemoryManager::drain`] returned to the device.
#[derive(Debug, Default)]
pub struct DrainOutcome {
    /// Blocks freed on the device.
    pub blocks: usize,
    /// Bytes freed on the device.
    pub bytes: usize,
    /// Cached blocks the device failed to free: (address, size, error).
    /// The manager forgets them either way.
    pub failed: Vec<(DevicePtr, usize, Error)>,
}

/// One block the manager owns.
#[derive(Debug, Clone, Copy)]
struct Node {
    size: usize,
    cached: bool,
}

/// The free blocks of one bucket, by exact size.
#[derive(Debug, Default)]
struct FreeList {
    by_size: BTreeMap<usize, Vec<DevicePtr>>,
}

impl FreeList {
    fn take(&mut self, size: usize) -> Option<DevicePtr> {
        let blocks = self.by_size.get_mut(&size)?;
        let ptr = blocks.pop();
        if blocks.is_empty() {
            self.by_size.remove(&size);
        }
        ptr
    }

    fn put(&mut self, size: usize, ptr: DevicePtr) {
        self.by_size.entry(size).or_default().push(ptr);
    }

    fn take_all(&mut self) -> Vec<(DevicePtr, usize)> {
        std::mem::take(&mut self.by_size)
            .into_iter()
            .flat_map(|(size, ptrs)| ptrs.into_iter().map(move |p| (p, size)))
            .collect()
    }
}

/// The caching allocator of one device. Thread-safe: one lock per bucket and
/// one for the block table, never held together nor across a device call.
pub struct MemoryManager<A> {
    allocator: A,
    threshold: usize,
    free_lists: [Mutex<FreeList>; BUCKET_SIZES.len()],
    /// Every block the manager owns (cached or handed out) -> its state.
    nodes: Mutex<HashMap<DevicePtr, Node>>,
    cached_blocks: AtomicUsize,
    cached_bytes: AtomicUsize,
    live_blocks: AtomicUsize,
    live_bytes: AtomicUsize,
}

impl<A: DeviceAllocator> MemoryManager<A> {
    /// A manager caching blocks of at most `threshold` bytes (0: none).
    pub fn new(allocator: A, threshold: usize) -> Self {
        MemoryManager {
            allocator,
            threshold,
            free_lists: Default::default(),
            nodes: Mutex::new(HashMap::new()),
            cached_blocks: AtomicUsize::new(0),
            cached_bytes: AtomicUsize::new(0),
            live_blocks: AtomicUsize::new(0),
            live_bytes: AtomicUsize::new(0),
        }
    }

    /// The allocator behind the manager.
    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// True when small blocks are cached.
    pub fn is_enabled(&self) -> bool {
        self.threshold > 0
    }

    /// The caching threshold in bytes.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// What the manager holds.
    pub fn stats(&self) -> MemoryStats {
        MemoryStats {
            threshold: self.threshold,
            cached_blocks: self.cached_blocks.load(Ordering::Relaxed),
            cached_bytes: self.cached_bytes.load(Ordering::Relaxed),
            live_blocks: self.live_blocks.load(Ordering::Relaxed),
            live_bytes: self.live_bytes.load(Ordering::Relaxed),
        }
    }

    /// Allocate `size` (> 0) bytes: from the cache if a block of exactly
    /// this size is free, else from the device (freeing the cache and
    /// retrying once if the device is out of memory).
    pub fn allocate(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr> {
        if size == 0 {
            return Err(Error::InvalidArgument("allocation of 0 bytes".into()));
        }
        if size > self.threshold {
            tracing::trace!(size, threshold = self.threshold, "unmanaged allocation");
            return self.allocate_or_free_and_retry(size, host_ptr, kind);
        }
        let reused = lock(&self.free_lists[bucket_of(size)]).take(size);
        let ptr = match reused {
            Some(ptr) => {
                self.cached_blocks.fetch_sub(1, Ordering::Relaxed);
                self.cached_bytes.fetch_sub(size, Ordering::Relaxed);
                if let Some(node) = lock(&self.nodes).get_mut(&ptr) {
                    node.cached = false;
                }
                tracing::trace!(size, ptr = ?ptr.0, "reused a cached block");
                ptr
            }
            None => {
                let ptr = self.allocate_or_free_and_retry(size, host_ptr, kind)?;
                lock(&self.nodes).insert(
                    ptr,
                    Node {
                        size,
                        cached: false,
                    },
                );
                ptr
            }
        };
        self.live_blocks.fetch_add(1, Ordering::Relaxed);
        self.live_bytes.fetch_add(size, Ordering::Relaxed);
        Ok(ptr)
    }

    /// Free `ptr`: a managed block goes back on its free list, anything else
    /// straight to the device. Freeing a block that is already cached is an
    /// [`Error::UnknownDevicePointer`] and changes nothing.
    pub fn free(&self, ptr: DevicePtr) -> Result<()> {
        let size = {
            let mut nodes = lock(&self.nodes);
            match nodes.get_mut(&ptr) {
                None => None,
                Some(node) if node.cached => {
                    return Err(Error::UnknownDevicePointer {
                        device: self.allocator.device_number(),
                        ptr: ptr.0 as usize,
                    })
                }
                Some(node) => {
                    node.cached = true;
                    Some(node.size)
                }
            }
        };
        let Some(size) = size else {
            return self.allocator.free(ptr);
        };
        self.live_blocks.fetch_sub(1, Ordering::Relaxed);
        self.live_bytes.fetch_sub(size, Ordering::Relaxed);
        lock(&self.free_lists[bucket_of(size)]).put(size, ptr);
        self.cached_blocks.fetch_add(1, Ordering::Relaxed);
        self.cached_bytes.fetch_add(size, Ordering::Relaxed);
        tracing::trace!(size, ptr = ?ptr.0, "cached a freed block");
        Ok(())
    }

    /// Free `ptr` on the device now, bypassing the cache (shutdown frees the
    /// blocks the user still holds this way). Returns whether it was a
    /// managed block.
    pub fn release(&self, ptr: DevicePtr) -> Result<bool> {
        let node = lock(&self.nodes).remove(&ptr);
        match node {
            Some(node) if node.cached => {
                // Was not handed out: put the bookkeeping back, refuse.
                lock(&self.nodes).insert(ptr, node);
                Err(Error::UnknownDevicePointer {
                    device: self.allocator.device_number(),
                    ptr: ptr.0 as usize,
                })
            }
            Some(node) => {
                self.live_blocks.fetch_sub(1, Ordering::Relaxed);
                self.live_bytes.fetch_sub(node.size, Ordering::Relaxed);
                self.allocator.free(ptr).map(|()| true)
            }
            None => self.allocator.free(ptr).map(|()| false),
        }
    }

    /// Return every cached block to the device.
    pub fn drain(&self) -> DrainOutcome {
        let mut outcome = DrainOutcome::default();
        let mut released = Vec::new();
        for list in &self.free_lists {
            let blocks = lock(list).take_all();
            for (ptr, size) in blocks {
                self.cached_blocks.fetch_sub(1, Ordering::Relaxed);
                self.cached_bytes.fetch_sub(size, Ordering::Relaxed);
                match self.allocator.free(ptr) {
                    Ok(()) => {
                        outcome.blocks += 1;
                        outcome.bytes += size;
                    }
                    Err(e) => outcome.failed.push((ptr, size, e)),
                }
                released.push(ptr);
            }
        }
        if !released.is_empty() {
            let mut nodes = lock(&self.nodes);
            for ptr in released {
                nodes.remove(&ptr);
            }
        }
        outcome
    }

    fn allocate_or_free_and_retry(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr> {
        match self.allocator.allocate(size, host_ptr, kind) {
            Err(Error::OutOfMemory { .. }) => {
                let drained = self.drain();
                tracing::debug!(
                    size,
                    freed_blocks = drained.blocks,
                    freed_bytes = drained.bytes,
                    "device out of memory: freed the cache, retrying once"
                );
                self.allocator.allocate(size, host_ptr, kind)
            }
            other => other,
        }
    }
}

/// The bucket of a managed size: the largest bucket bound <= size.
fn bucket_of(size: usize) -> usize {
    BUCKET_SIZES
        .iter()
        .rposition(|&bound| bound <= size)
        .unwrap_or(0)
}

/// Lock, ignoring poisoning: every critical section leaves the data
/// consistent before it can panic.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A fake device: hands out fresh addresses, counts calls, can be
    /// limited in live bytes like the test plugin's `alloc_limit_bytes`.
    #[derive(Default)]
    struct FakeDevice {
        limit: Option<usize>,
        state: Mutex<FakeState>,
    }

    #[derive(Default)]
    struct FakeState {
        next: usize,
        live: HashMap<usize, usize>,
        allocs: usize,
        frees: usize,
    }

    impl FakeDevice {
        fn limited(limit: usize) -> Self {
            FakeDevice {
                limit: Some(limit),
                ..Default::default()
            }
        }
        fn allocs(&self) -> usize {
            self.state.lock().unwrap().allocs
        }
        fn frees(&self) -> usize {
            self.state.lock().unwrap().frees
        }
        fn live_bytes(&self) -> usize {
            self.state.lock().unwrap().live.values().sum()
        }
    }

    impl DeviceAllocator for FakeDevice {
        fn allocate(&self, size: usize, _: *mut c_void, _: AllocKind) -> Result<DevicePtr> {
            let mut s = self.state.lock().unwrap();
            let live: usize = s.live.values().sum();
            if self.limit.is_some_and(|limit| live + size > limit) {
                return Err(Error::OutOfMemory {
                    device: 0,
                    plugin: "fake".into(),
                    size,
                });
            }
            s.next += 0x1000;
            let addr = s.next;
            s.live.insert(addr, size);
            s.allocs += 1;
            Ok(DevicePtr(addr as *mut c_void))
        }
        fn free(&self, ptr: DevicePtr) -> Result<()> {
            let mut s = self.state.lock().unwrap();
            s.live
                .remove(&(ptr.0 as usize))
                .ok_or(Error::UnknownDevicePointer {
                    device: 0,
                    ptr: ptr.0 as usize,
                })?;
            s.frees += 1;
            Ok(())
        }
    }

    impl DeviceAllocator for Arc<FakeDevice> {
        fn allocate(&self, size: usize, h: *mut c_void, k: AllocKind) -> Result<DevicePtr> {
            (**self).allocate(size, h, k)
        }
        fn free(&self, ptr: DevicePtr) -> Result<()> {
            (**self).free(ptr)
        }
    }

    fn alloc(mm: &MemoryManager<impl DeviceAllocator>, size: usize) -> DevicePtr {
        mm.allocate(size, std::ptr::null_mut(), AllocKind::Default)
            .expect("allocation")
    }

    #[test]
    fn buckets_are_floor_powers_of_two() {
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(3), 0);
        assert_eq!(bucket_of(4), 1);
        assert_eq!(bucket_of(7), 1);
        assert_eq!(bucket_of(8), 2);
        assert_eq!(bucket_of(4095), 10);
        assert_eq!(bucket_of(4096), 11);
        assert_eq!(bucket_of(8192), 12);
        assert_eq!(bucket_of(1 << 20), 12);
    }

    #[test]
    fn freed_small_block_is_reused_for_the_same_size() {
        let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
        let a = alloc(&mm, 100);
        mm.free(a).unwrap();
        assert_eq!(mm.stats().cached_blocks, 1);
        assert_eq!(mm.stats().cached_bytes, 100);
        let b = alloc(&mm, 100);
        assert_eq!(a, b, "same size takes the cached block");
        assert_eq!(mm.allocator().allocs(), 1);
        // A different size in the same bucket does not take it.
        mm.free(b).unwrap();
        let c = alloc(&mm, 101);
        assert_ne!(c, a);
        assert_eq!(mm.allocator().allocs(), 2);
        assert_eq!(mm.allocator().frees(), 0);
        let s = mm.stats();
        assert_eq!((s.cached_blocks, s.live_blocks, s.live_bytes), (1, 1, 101));
    }

    #[test]
    fn blocks_over_the_threshold_go_straight_to_the_device() {
        let mm = MemoryManager::new(FakeDevice::default(), 64);
        let small = alloc(&mm, 64);
        let big = alloc(&mm, 65);
        mm.free(big).unwrap();
        mm.free(small).unwrap();
        assert_eq!(mm.allocator().frees(), 1, "only the big block was freed");
        assert_eq!(mm.stats().cached_bytes, 64);
        assert_eq!(mm.allocator().live_bytes(), 64);
    }

    #[test]
    fn threshold_zero_disables_caching() {
        let mm = MemoryManager::new(FakeDevice::default(), 0);
        assert!(!mm.is_enabled());
        let a = alloc(&mm, 8);
        mm.free(a).unwrap();
        let _b = alloc(&mm, 8);
        assert_eq!(mm.allocator().allocs(), 2);
        assert_eq!(mm.allocator().frees(), 1);
        assert_eq!(mm.stats(), MemoryStats::default());
    }

    #[test]
    fn zero_bytes_is_rejected() {
        let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
        assert!(matches!(
            mm.allocate(0, std::ptr::null_mut(), AllocKind::Default),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(mm.allocator().allocs(), 0);
    }

    #[test]
    fn out_of_memory_frees_the_cache_and_retries_once() {
        let mm = MemoryManager::new(FakeDevice::limited(1000), DEFAULT_THRESHOLD);
        let blocks: Vec<_> = (0..3).map(|_| alloc(&mm, 300)).collect();
        for b in blocks {
            mm.free(b).unwrap();
        }
        assert_eq!(mm.stats().cached_bytes, 900);
        // 500 bytes fit only once the 900 cached bytes are returned.
        let _big = alloc(&mm, 500);
        assert_eq!(mm.allocator().frees(), 3);
        let s = mm.stats();
        assert_eq!((s.cached_blocks, s.cached_bytes), (0, 0));
        assert_eq!((s.live_blocks, s.live_bytes), (1, 500));
        // Still too big after the retry: the error comes through.
        let err = mm
            .allocate(600, std::ptr::null_mut(), AllocKind::Default)
            .unwrap_err();
        assert!(matches!(err, Error::OutOfMemory { size: 600, .. }));
    }

    #[test]
    fn double_free_of_a_cached_block_is_an_error() {
        let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
        let a = alloc(&mm, 16);
        mm.free(a).unwrap();
        assert!(matches!(
            mm.free(a),
            Err(Error::UnknownDevicePointer { .. })
        ));
        assert!(mm.release(a).is_err());
        assert_eq!(mm.stats().cached_blocks, 1, "nothing changed");
    }

    #[test]
    fn drain_and_release_return_everything() {
        let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
        let a = alloc(&mm, 16);
        let b = alloc(&mm, 32);
        let big = alloc(&mm, 1 << 20);
        mm.free(a).unwrap();
        let drained = mm.drain();
        assert_eq!((drained.blocks, drained.bytes), (1, 16));
        assert!(mm.release(b).unwrap(), "b is managed");
        assert!(!mm.release(big).unwrap(), "big is not");
        assert_eq!(mm.allocator().live_bytes(), 0);
        assert_eq!(
            mm.stats(),
            MemoryStats {
                threshold: DEFAULT_THRESHOLD,
                ..Default::default()
            }
        );
    }

    #[test]
    fn concurrent_alloc_free_keeps_counts_consistent() {
        let device = Arc::new(FakeDevice::default());
        let mm = Arc::new(MemoryManager::new(device.clone(), DEFAULT_THRESHOLD));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mm = mm.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let size = 8 << ((i + t) % 8);
                        let p = alloc(&*mm, size);
                        mm.free(p).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = mm.stats();
        assert_eq!(s.live_blocks, 0);
        assert_eq!(s.cached_bytes, device.live_bytes());
        let drained = mm.drain();
        assert_eq!(drained.bytes, s.cached_bytes);
        assert_eq!(device.live_bytes(), 0);
    }
}
