use super::*;
use std::collections::HashMap;
use std::sync::Arc;

/// A fake device: hands out fresh addresses, counts calls, can be
/// limited in live bytes like the test plugin's `alloc_limit_bytes`.
#[derive(Default)]
struct FakeDevice {
    limit: Option<usize>,
    /// When set, every free fails (and frees nothing).
    fail_frees: std::sync::atomic::AtomicBool,
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
        Ok(DevicePtr::from_raw(addr as *mut c_void))
    }
    fn free(&self, ptr: DevicePtr) -> Result<()> {
        if self.fail_frees.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::InvalidArgument("injected free failure".into()));
        }
        let mut s = self.state.lock().unwrap();
        s.live
            .remove(&(ptr.addr()))
            .ok_or(Error::UnknownDevicePointer {
                device: 0,
                ptr: ptr.addr(),
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
fn size_classes_round_up_by_at_most_a_quarter() {
    let class = |size| SizeClass::of(size).map(|c| (c.index, c.size));
    assert_eq!(class(0), None);
    assert_eq!(class(1), Some((0, 16)));
    assert_eq!(class(16), Some((0, 16)));
    assert_eq!(class(17), Some((1, 32)));
    assert_eq!(class(64), Some((3, 64)));
    assert_eq!(class(65), Some((4, 80)));
    assert_eq!(class(100), Some((6, 112)));
    assert_eq!(class(128), Some((7, 128)));
    assert_eq!(class(129), Some((8, 160)));
    assert_eq!(class(4096), Some((27, 4096)));
    assert_eq!(class(4097), Some((28, 5120)));
    assert_eq!(class(8192), Some((31, 8192)));
    assert_eq!(class(usize::MAX), None);
    for size in (1..70_000).chain([1 << 40, (1 << 40) + 1, usize::MAX / 2]) {
        let c = SizeClass::of(size).unwrap();
        assert!(
            c.size >= size && (c.size - size < 16 || c.size - size <= size / 4),
            "{size}: {c:?}"
        );
        assert_eq!(SizeClass::from_index(c.index), c, "{size}");
        if size > 1 {
            assert!(SizeClass::of(size - 1).unwrap().index <= c.index);
        }
    }
}

#[test]
fn freed_small_block_is_reused_for_its_size_class() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let a = alloc(&mm, 100);
    assert_eq!(
        mm.allocator().live_bytes(),
        112,
        "the device allocates the class"
    );
    mm.free(a).unwrap();
    assert_eq!(mm.stats().cached_blocks, 1);
    assert_eq!(mm.stats().cached_bytes, 112);
    let b = alloc(&mm, 100);
    assert_eq!(a, b, "same size takes the cached block");
    mm.free(b).unwrap();
    let c = alloc(&mm, 110);
    assert_eq!(c, a, "another size of the same class takes it too");
    assert_eq!(mm.allocator().allocs(), 1);
    // A size of the next class does not.
    mm.free(c).unwrap();
    let d = alloc(&mm, 113);
    assert_ne!(d, a);
    assert_eq!(mm.allocator().allocs(), 2);
    assert_eq!(mm.allocator().frees(), 0);
    let s = mm.stats();
    assert_eq!((s.cached_blocks, s.live_blocks, s.live_bytes), (1, 1, 113));
}

#[test]
fn a_device_returning_a_live_address_keeps_the_counts_right() {
    // A misbehaving device hands out the address of a live unmanaged
    // block again, for a managed request: the old record goes, and
    // with it only its own counts (it was never counted as managed).
    struct SameAddress(std::sync::atomic::AtomicUsize);
    impl DeviceAllocator for SameAddress {
        fn allocate(&self, _: usize, _: *mut c_void, _: AllocKind) -> Result<DevicePtr> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(DevicePtr::from_raw(0x1000 as *mut c_void))
        }
        fn free(&self, _: DevicePtr) -> Result<()> {
            Ok(())
        }
    }
    let mm = MemoryManager::new(SameAddress(Default::default()), DEFAULT_THRESHOLD);
    let host = mm
        .allocate(1 << 20, std::ptr::null_mut(), AllocKind::Host)
        .unwrap();
    let small = alloc(&mm, 16);
    assert_eq!(host, small);
    let s = mm.stats();
    assert_eq!((s.live_blocks, s.live_bytes), (1, 16));
    assert_eq!(mm.live_allocations(), (1, 16));
    // And the other way round: the managed record is replaced by an
    // unmanaged one, whose counts are not the manager's.
    mm.allocate(4 << 20, std::ptr::null_mut(), AllocKind::Shared)
        .unwrap();
    let s = mm.stats();
    assert_eq!((s.live_blocks, s.live_bytes), (0, 0));
    assert_eq!(mm.live_allocations(), (1, 4 << 20));
}

#[test]
fn blocks_freed_on_another_thread_are_reused() {
    // One thread allocates, another frees: the allocating thread never
    // frees, so its shard hint is never its blocks' shard, yet it finds
    // them through the shards' bitmaps instead of growing the cache.
    let mm = Arc::new(MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD));
    let (to_free, freed) = std::sync::mpsc::sync_channel::<DevicePtr>(8);
    let freer = {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || {
            for ptr in freed {
                mm.free(ptr).unwrap();
            }
        })
    };
    for round in 0..2_000 {
        to_free.send(alloc(&mm, 64 + round % 3 * 200)).unwrap();
    }
    drop(to_free);
    freer.join().unwrap();
    let s = mm.stats();
    assert_eq!(s.live_blocks, 0);
    assert!(s.cached_blocks <= 3 * 10, "{s:?}");
    assert!(
        mm.allocator().allocs() <= 3 * 10,
        "{}",
        mm.allocator().allocs()
    );
}

#[test]
fn varied_sizes_do_not_grow_the_cache_beyond_the_live_peak() {
    // Allocate and free random sizes with at most 50 live: the device
    // sees at most one block per class and live slot, not one per size.
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut live = Vec::new();
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if live.len() == 50 {
            mm.free(live.swap_remove((seed % 50) as usize)).unwrap();
        }
        live.push(alloc(&mm, 1 + (seed >> 40) as usize % DEFAULT_THRESHOLD));
    }
    let s = mm.stats();
    assert!(s.cached_blocks + s.live_blocks <= 50 * 32, "{s:?}");
    assert!(
        mm.allocator().allocs() < 2_000,
        "{}",
        mm.allocator().allocs()
    );
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
    assert_eq!(
        mm.stats().cached_bytes,
        960,
        "3 blocks of the 320-byte class"
    );
    // 500 bytes (class 512) fit only once the cached bytes are returned.
    let _big = alloc(&mm, 500);
    assert_eq!(mm.allocator().frees(), 3);
    let s = mm.stats();
    assert_eq!((s.cached_blocks, s.cached_bytes), (0, 0));
    assert_eq!((s.live_blocks, s.live_bytes), (1, 500));
    // Still too big after the retry: the error comes through, with the
    // size asked for (not its class's 640).
    let err = mm
        .allocate(600, std::ptr::null_mut(), AllocKind::Default)
        .unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { size: 600, .. }));
}

/// Every class index fits the record's byte without meeting the
/// `UNMANAGED` mark, and the bitmap of non-empty classes.
#[test]
fn every_class_index_fits_its_byte_and_the_bitmap() {
    let largest = (0..usize::BITS)
        .flat_map(|shift| [usize::MAX >> shift, 1usize << shift])
        .filter_map(SizeClass::of)
        .map(|c| c.index)
        .max()
        .unwrap();
    assert!(largest < usize::from(UNMANAGED), "{largest}");
    assert!(largest < CLASS_WORDS * 64, "{largest}");
}

/// Cached blocks whose free failed while an out-of-memory retry drained
/// the cache are not lost without a word: the next drain (the
/// shutdown's) lists them with their error.
#[test]
fn blocks_a_retry_failed_to_free_are_reported_by_the_next_drain() {
    let mm = MemoryManager::new(FakeDevice::limited(1000), DEFAULT_THRESHOLD);
    let cached = alloc(&mm, 300);
    mm.free(cached).unwrap();
    mm.allocator()
        .fail_frees
        .store(true, std::sync::atomic::Ordering::Relaxed);
    // 800 bytes do not fit beside the cached 320: the retry drains the
    // cache, whose free fails, and the retry fails too.
    assert!(mm
        .allocate(800, std::ptr::null_mut(), AllocKind::Default)
        .is_err());
    assert_eq!(mm.stats().cached_blocks, 0, "the manager forgot it");
    mm.allocator()
        .fail_frees
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let drained = mm.drain();
    let failed: Vec<(usize, usize)> = drained
        .failed
        .iter()
        .map(|(ptr, size, _)| (ptr.addr(), *size))
        .collect();
    assert_eq!(failed, [(cached.addr(), 320)]);
    assert!(mm.drain().failed.is_empty(), "reported once");
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
fn a_sized_free_of_a_block_of_another_size_is_an_error_and_changes_nothing() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let small = alloc(&mm, 16);
    let big = alloc(&mm, 1 << 20);
    assert!(matches!(
        mm.free_sized(small, Some(32)),
        Err(Error::UnknownDevicePointer { .. })
    ));
    assert!(mm.free_sized(big, Some(1 << 19)).is_err());
    assert_eq!(mm.live_allocations(), (2, 16 + (1 << 20)), "nothing freed");
    assert_eq!(mm.free_sized(small, Some(16)).unwrap().size, 16);
    assert_eq!(mm.free_sized(big, Some(1 << 20)).unwrap().size, 1 << 20);
    assert_eq!(mm.live_allocations(), (0, 0));
}

#[test]
fn unknown_pointer_is_an_error_and_changes_nothing() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let a = alloc(&mm, 16);
    let big = alloc(&mm, 1 << 20);
    let stranger = DevicePtr::from_raw(0xdead_0000 as *mut c_void);
    assert!(matches!(
        mm.free(stranger),
        Err(Error::UnknownDevicePointer {
            ptr: 0xdead_0000,
            ..
        })
    ));
    assert!(mm.release(stranger).is_err());
    mm.free(big).unwrap();
    assert!(mm.free(big).is_err(), "double free of an unmanaged block");
    assert_eq!(mm.allocator().frees(), 1);
    assert_eq!(mm.live_allocations(), (1, 16));
    assert_eq!(
        mm.allocation(a),
        Some(LiveAllocation {
            size: 16,
            kind: AllocKind::Default,
            origin: crate::origin::AllocOrigin::Unknown,
        })
    );
    assert_eq!(mm.allocation(big), None);
}

#[test]
fn failed_device_free_keeps_the_block_live() {
    let mm = MemoryManager::new(FakeDevice::default(), 64);
    let big = alloc(&mm, 65);
    let small = alloc(&mm, 64);
    mm.allocator()
        .fail_frees
        .store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(mm.free(big).is_err());
    assert!(mm.release(small).is_err());
    assert_eq!(mm.live_allocations(), (2, 129));
    assert_eq!(mm.stats().live_blocks, 1);
    mm.allocator()
        .fail_frees
        .store(false, std::sync::atomic::Ordering::Relaxed);
    mm.free(big).unwrap();
    assert!(mm.release(small).unwrap());
    assert_eq!(mm.live_allocations(), (0, 0));
    assert_eq!(mm.allocator().live_bytes(), 0);
}

#[test]
fn host_and_shared_blocks_are_tracked_but_never_cached() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let h = mm
        .allocate(32, std::ptr::null_mut(), AllocKind::Host)
        .unwrap();
    let s = mm
        .allocate(32, std::ptr::null_mut(), AllocKind::Shared)
        .unwrap();
    assert_eq!(mm.live_allocations(), (2, 64));
    assert_eq!(mm.stats().live_blocks, 0, "not managed");
    assert_eq!(mm.free(h).unwrap().kind, AllocKind::Host);
    mm.free(s).unwrap();
    assert_eq!(mm.allocator().frees(), 2);
    assert_eq!(mm.stats().cached_blocks, 0);
}

#[test]
fn live_lists_every_block_by_address() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let ptrs: Vec<_> = (1..=40).map(|i| alloc(&mm, i * 100)).collect();
    let live = mm.live();
    assert_eq!(live.len(), 40);
    assert!(live.windows(2).all(|w| w[0].0.addr() < w[1].0.addr()));
    assert_eq!(live.iter().map(|(p, _)| *p).collect::<Vec<_>>(), ptrs);
}

#[test]
fn aligned_addresses_spread_over_the_shards() {
    let mut used = [0usize; SHARDS];
    for i in 0..1024usize {
        used[shard_of(DevicePtr::from_raw(
            (0x7f00_0000_0000 + i * 64) as *mut c_void,
        ))] += 1;
    }
    assert!(used.iter().all(|&n| n > 1024 / SHARDS / 2), "{used:?}");
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
fn drain_frees_in_address_order_and_reports_each_failure_with_its_size() {
    /// Records each batch; fails the blocks at odd places in it,
    /// reporting them last first (the manager must not rely on order).
    #[derive(Default)]
    struct OddFail {
        device: FakeDevice,
        batches: Mutex<Vec<Vec<usize>>>,
    }
    impl DeviceAllocator for OddFail {
        fn allocate(&self, size: usize, h: *mut c_void, k: AllocKind) -> Result<DevicePtr> {
            self.device.allocate(size, h, k)
        }
        fn free(&self, ptr: DevicePtr) -> Result<()> {
            self.device.free(ptr)
        }
        fn free_many(&self, ptrs: &[DevicePtr]) -> Vec<(usize, Error)> {
            lock(&self.batches).push(ptrs.iter().map(|p| p.addr()).collect());
            let mut failed = Vec::new();
            for (i, &ptr) in ptrs.iter().enumerate().rev() {
                if i % 2 == 1 {
                    failed.push((i, Error::InvalidArgument("odd".into())));
                } else {
                    self.device.free(ptr).unwrap();
                }
            }
            failed
        }
    }
    let mm = MemoryManager::new(OddFail::default(), DEFAULT_THRESHOLD);
    let sizes: Vec<usize> = (0..40).map(|i| 16 << (i % 10)).collect();
    let blocks: Vec<(DevicePtr, usize)> = sizes.iter().map(|&s| (alloc(&mm, s), s)).collect();
    for &(ptr, _) in blocks.iter().rev() {
        mm.free(ptr).unwrap();
    }
    let drained = mm.drain();
    let batches = lock(&mm.allocator().batches).clone();
    assert_eq!(batches.len(), 1, "one batch");
    let mut sorted = batches[0].clone();
    sorted.sort_unstable();
    assert_eq!(batches[0], sorted, "address order");
    assert_eq!(batches[0].len(), 40);
    let class_size = |addr: usize| {
        let &(_, size) = blocks.iter().find(|(p, _)| p.addr() == addr).unwrap();
        SizeClass::of(size).unwrap().size
    };
    let failed: Vec<(usize, usize)> = drained
        .failed
        .iter()
        .map(|(ptr, size, _)| (ptr.addr(), *size))
        .collect();
    let expected: Vec<(usize, usize)> = batches[0]
        .iter()
        .skip(1)
        .step_by(2)
        .map(|&a| (a, class_size(a)))
        .collect();
    assert_eq!(failed, expected);
    assert_eq!(drained.blocks, 20);
    let freed: usize = batches[0].iter().step_by(2).map(|&a| class_size(a)).sum();
    assert_eq!(drained.bytes, freed);
    assert_eq!(mm.stats().cached_blocks, 0, "forgotten either way");
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

#[test]
fn a_cached_block_is_not_a_live_allocation() {
    // Its entry stays in the table while it is cached: none of the
    // queries may take it for a live one.
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let kept = alloc(&mm, 100);
    let cached = alloc(&mm, 32);
    mm.free(cached).unwrap();
    assert_eq!(mm.allocation(cached), None);
    assert_eq!(mm.live_allocations(), (1, 100));
    assert_eq!(mm.live().len(), 1);
    assert_eq!(mm.live()[0].0, kept);
    assert!(matches!(
        mm.release(cached),
        Err(Error::UnknownDevicePointer { .. })
    ));
    // Handed out again: live with its new record.
    let again = alloc(&mm, 20);
    assert_eq!(again, cached);
    assert_eq!(mm.allocation(again).map(|a| a.size), Some(20));
    assert_eq!(mm.live_allocations(), (2, 120));
}

#[test]
fn a_drained_block_is_forgotten_and_its_address_can_come_back() {
    let mm = MemoryManager::new(FakeDevice::default(), DEFAULT_THRESHOLD);
    let a = alloc(&mm, 64);
    mm.free(a).unwrap();
    assert_eq!(mm.drain().blocks, 1);
    assert!(matches!(
        mm.free(a),
        Err(Error::UnknownDevicePointer { .. })
    ));
    // A fresh device block at a drained address is an ordinary live one.
    mm.record(
        a,
        Record::new(
            LiveAllocation {
                size: 8,
                kind: AllocKind::Default,
                origin: crate::origin::AllocOrigin::Unknown,
            },
            SizeClass::of(8),
        ),
    );
    assert_eq!(mm.allocation(a).map(|r| r.size), Some(8));
    mm.free(a).unwrap();
    assert_eq!(mm.stats().cached_blocks, 1);
}

#[test]
fn a_device_returning_a_cached_address_never_hands_it_out_twice() {
    // A misbehaving device hands out the address of a cached block again:
    // the block is live under its new record, so the free list must not
    // hand it out a second time, nor the drain free it under its owner.
    struct SameAddress;
    impl DeviceAllocator for SameAddress {
        fn allocate(&self, _: usize, _: *mut c_void, _: AllocKind) -> Result<DevicePtr> {
            Ok(DevicePtr::from_raw(0x1000 as *mut c_void))
        }
        fn free(&self, _: DevicePtr) -> Result<()> {
            Ok(())
        }
    }
    let mm = MemoryManager::new(SameAddress, DEFAULT_THRESHOLD);
    let small = alloc(&mm, 16);
    mm.free(small).unwrap();
    let host = mm
        .allocate(1 << 20, std::ptr::null_mut(), AllocKind::Host)
        .unwrap();
    assert_eq!(host, small);
    assert_eq!(mm.allocation(host).map(|a| a.size), Some(1 << 20));
    // The next small request finds the stale list entry, skips it and
    // asks the device (which, misbehaving, answers the same address).
    let next = alloc(&mm, 16);
    assert_eq!(mm.allocation(next).map(|a| a.size), Some(16));
    assert_eq!(mm.stats().cached_blocks, 0);
    mm.free(next).unwrap();
    assert_eq!(mm.stats().cached_blocks, 1);
    // A stale list entry is dropped by the drain, not freed.
    let host = mm
        .allocate(1 << 20, std::ptr::null_mut(), AllocKind::Host)
        .unwrap();
    assert_eq!(mm.drain().blocks, 0);
    assert_eq!(mm.allocation(host).map(|a| a.size), Some(1 << 20));
}

#[test]
fn a_stale_list_entry_of_another_class_is_never_revived() {
    // A misbehaving device hands out a cached block's address again for a
    // request of another size class; that block is then freed into its new
    // class, so the address is cached in both lists. A request of the first
    // class must not revive it: the block is smaller than that class.
    struct SameAddress(std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl DeviceAllocator for SameAddress {
        fn allocate(&self, _: usize, _: *mut c_void, _: AllocKind) -> Result<DevicePtr> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(DevicePtr::from_raw(0x1000 as *mut c_void))
        }
        fn free(&self, _: DevicePtr) -> Result<()> {
            Ok(())
        }
    }
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mm = MemoryManager::new(SameAddress(asked.clone()), DEFAULT_THRESHOLD);
    let big = alloc(&mm, 4096);
    mm.free(big).unwrap();
    // The 4 KiB list holds 0x1000; the device hands it out for 16 bytes.
    let small = alloc(&mm, 16);
    assert_eq!(small, big);
    mm.free(small).unwrap();
    // 0x1000 is now cached as a 16-byte block and stale on the 4 KiB list.
    let again = alloc(&mm, 4096);
    assert_eq!(mm.allocation(again).map(|a| a.size), Some(4096));
    // Served by the device (its third allocation), not by reviving the
    // 16-byte block from the 4 KiB list.
    assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 3);
}
