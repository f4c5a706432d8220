//! A per-device caching allocator for small blocks, in front of the plugin's
//! `data_alloc`/`data_delete`, with the semantics of LLVM 14's
//! `MemoryManager.h`:
//!
//! * requests of `Default`/`Device` kind of at most `threshold` bytes are
//!   *managed*: they are rounded up to a size class (multiples of 16 up to
//!   64 bytes, then four classes per power of two: at most 25% more), and
//!   freeing one puts it on its class's free list instead of returning it
//!   to the device, where any later request of the same class takes it
//!   back. (LLVM's manager reuses a block only for exactly the same size,
//!   so a program that allocates varied sizes grows its cache without
//!   bound, every miss a fresh device allocation.)
//! * larger requests, and `Host`/`Shared` ones, go straight to the device;
//! * when the device fails an allocation, every cached block is returned to
//!   it and the allocation is retried once;
//! * a threshold of 0 disables caching (everything goes straight through).
//!
//! Unlike LLVM's, the manager is also the device's table of live
//! allocations: every block it handed out (managed or not) is recorded until
//! freed, so a double free or an unknown pointer is an error that changes
//! nothing, and shutdown can list what the user never freed. The table is
//! sharded by address; a shard keeps its live records and its cached blocks
//! under one lock, so a free, or an allocation served from the cache, takes
//! one uncontended lock (no process-wide counter). Why size classes, how the
//! shards are searched, and the numbers: `docs/memory-manager.md`.
//!
//! The manager is generic over [`DeviceAllocator`] so it can be tested
//! without a plugin; a device uses its plugin's entries.
use crate::sync::lock;
use crate::{abi::AllocKind, DevicePtr, Error, Result};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Default threshold (bytes), as LLVM's: 8 KiB.
pub const DEFAULT_THRESHOLD: usize = 1 << 13;

/// Number of shards of the live-block table (a power of two).
const SHARDS: usize = 16;

/// Where the manager gets memory from and returns it to.
pub trait DeviceAllocator {
    /// Allocate `size` (> 0) bytes. [`Error::OutOfMemory`] tells the manager
    /// that freeing its cache may help; any other error is passed on as is.
    fn allocate(&self, size: usize, host_ptr: *mut c_void, kind: AllocKind) -> Result<DevicePtr>;
    /// Return memory that [`DeviceAllocator::allocate`] gave.
    fn free(&self, ptr: DevicePtr) -> Result<()>;
    /// Return many blocks (distinct, each as for [`DeviceAllocator::free`]);
    /// the failures, as (index in `ptrs`, error), in ascending index order.
    /// [`MemoryManager::drain`] passes them in address order, which is
    /// what a `free` walking the heap likes best. The default frees them
    /// one by one.
    fn free_many(&self, ptrs: &[DevicePtr]) -> Vec<(usize, Error)> {
        ptrs.iter()
            .enumerate()
            .filter_map(|(i, &ptr)| self.free(ptr).err().map(|e| (i, e)))
            .collect()
    }
    /// The device number errors name.
    fn device_number(&self) -> usize {
        0
    }
}

/// One allocation handed out and not yet freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveAllocation {
    /// Size the caller asked for, in bytes.
    pub size: usize,
    /// The kind of memory it was allocated as (device, host, shared, default).
    pub kind: AllocKind,
    /// Where it was allocated (for the leak report).
    pub origin: crate::origin::AllocOrigin,
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

mod live_table;
use live_table::LiveTable;

/// The shard of the live table that records `ptr`.
fn shard_of(ptr: DevicePtr) -> usize {
    // Bits 40-43 of a Fibonacci product: well mixed for aligned addresses.
    // The shard's table picks slots from the top bits of a product by
    // another multiplier, so the keys of one shard, which agree on these
    // bits, still spread over its table.
    let h = (ptr.addr() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 40) as usize & (SHARDS - 1)
}

/// Words of the per-shard bitmap of non-empty class lists: room for 256
/// classes ([`SizeClass::of`] gives at most 236, for sizes near `usize::MAX`).
const CLASS_WORDS: usize = 4;

/// What the live table keeps of an allocation: the caller's record and,
/// worked out once when the block is handed out, its size class (so a
/// free neither recomputes it nor asks again whether the block is cached).
#[derive(Clone, Copy)]
struct Record {
    size: usize,
    origin: crate::origin::AllocOrigin,
    kind: AllocKind,
    /// The size class index of a managed block, [`UNMANAGED`] otherwise.
    class: u8,
}

/// [`Record::class`] of a block that is not cached when freed.
const UNMANAGED: u8 = u8::MAX;

impl Record {
    fn new(allocation: LiveAllocation, class: Option<SizeClass>) -> Record {
        Record {
            size: allocation.size,
            origin: allocation.origin,
            kind: allocation.kind,
            // At most 236 classes exist (see `CLASS_WORDS`), so an index
            // never collides with UNMANAGED (tested:
            // `every_class_index_fits_its_byte_and_the_bitmap`).
            class: class.map_or(UNMANAGED, |c| c.index as u8),
        }
    }

    fn is_managed(&self) -> bool {
        self.class != UNMANAGED
    }

    fn allocation(&self) -> LiveAllocation {
        LiveAllocation {
            size: self.size,
            kind: self.kind,
            origin: self.origin,
        }
    }
}

/// The filler of the live table's empty slots.
const NO_RECORD: Record = Record {
    size: 0,
    origin: crate::origin::AllocOrigin::Unknown,
    kind: AllocKind::Default,
    class: UNMANAGED,
};

/// One shard: the blocks handed out whose address falls in it, and the
/// cached blocks of that address range, by size class. A block's live
/// record and its place on a free list are in the same shard (its
/// address's), so a free, and an allocation served from the cache, take
/// one lock.
struct Shard {
    live: LiveTable<Record>,
    managed_blocks: usize,
    managed_bytes: usize,
    /// Cached blocks by class index; grown on a class's first use, so the
    /// steady alloc/free of one class allocates nothing.
    free: Vec<Vec<DevicePtr>>,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            live: LiveTable::new(NO_RECORD),
            managed_blocks: 0,
            managed_bytes: 0,
            free: Vec::new(),
        }
    }
}

impl Shard {
    #[inline]
    fn insert_live(&mut self, ptr: DevicePtr, record: Record) {
        if record.is_managed() {
            self.managed_blocks += 1;
            self.managed_bytes += record.size;
        }
        if let Some(old) = self.live.insert(ptr.addr(), record) {
            // The device handed out an address that is still live: the old
            // record is gone, so its counts go (managed or not: the old and
            // the new record may differ in that); say so.
            if old.is_managed() {
                self.managed_blocks -= 1;
                self.managed_bytes -= old.size;
            }
            tracing::warn!(ptr = ?ptr.as_ptr(), "the device returned an address that is already live");
        }
    }

    #[inline]
    fn remove_live(&mut self, ptr: DevicePtr) -> Option<Record> {
        let record = self.live.remove(ptr.addr())?;
        if record.is_managed() {
            self.managed_blocks -= 1;
            self.managed_bytes -= record.size;
        }
        Some(record)
    }
}

/// A shard under its lock, with the bitmap of its non-empty class lists.
#[derive(Default)]
struct ShardCell {
    state: Mutex<Shard>,
    /// Bit `c`: this shard's list of class `c` is not empty. Written only
    /// under the lock (plain stores, no read-modify-write), read without it
    /// to choose which shard to lock for a cached block; a stale bit costs
    /// a lock or a device allocation, never a wrong answer.
    nonempty: [AtomicU64; CLASS_WORDS],
}

impl ShardCell {
    fn has(&self, class: usize) -> bool {
        self.nonempty[class / 64].load(Relaxed) & (1 << (class % 64)) != 0
    }

    fn set(&self, class: usize, nonempty: bool) {
        let word = &self.nonempty[class / 64];
        let bit = 1u64 << (class % 64);
        let old = word.load(Relaxed);
        word.store(if nonempty { old | bit } else { old & !bit }, Relaxed);
    }

    /// Take a cached block of `class`, if this shard has one.
    fn pop(&self, shard: &mut Shard, class: usize) -> Option<DevicePtr> {
        let list = shard.free.get_mut(class)?;
        let ptr = list.pop()?;
        if list.is_empty() {
            self.set(class, false);
        }
        Some(ptr)
    }

    /// Cache a freed block of `class`.
    fn push(&self, shard: &mut Shard, class: usize, ptr: DevicePtr) {
        if shard.free.len() <= class {
            shard.free.resize_with(class + 1, Vec::new);
        }
        shard.free[class].push(ptr);
        if shard.free[class].len() == 1 {
            self.set(class, true);
        }
    }
}

thread_local! {
    /// The shard of the block this thread freed or reused last: where its
    /// next allocation looks first. Constant-initialised and without a
    /// destructor (no exit-time code, as the design requires).
    static SHARD_HINT: Cell<u8> = const { Cell::new(0) };
}

/// A value on its own cache line, so that two threads working on
/// neighbouring shards do not share one.
#[derive(Default)]
#[repr(align(64))]
struct Padded<T>(T);

/// The caching allocator and live-allocation table of one device.
/// Thread-safe: one lock per shard of the address space; at most one is
/// held at a time, never across a device call.
pub struct MemoryManager<A> {
    allocator: A,
    threshold: usize,
    /// Every block handed out and not yet freed, and every cached block,
    /// sharded by address.
    shards: [Padded<ShardCell>; SHARDS],
    /// Cached blocks the device failed to free when an out-of-memory retry
    /// drained the cache: forgotten by the manager like the drain's own,
    /// kept here only so that the next [`MemoryManager::drain`] (the
    /// shutdown's) reports them.
    retry_failures: Mutex<Vec<(DevicePtr, usize, Error)>>,
}

impl<A: DeviceAllocator> MemoryManager<A> {
    /// A manager caching blocks of at most `threshold` bytes (0: none).
    pub fn new(allocator: A, threshold: usize) -> Self {
        MemoryManager {
            allocator,
            threshold,
            shards: Default::default(),
            retry_failures: Mutex::new(Vec::new()),
        }
    }

    /// The allocator behind the manager (tests and benchmarks).
    #[cfg(any(test, feature = "internals"))]
    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// True when small blocks are cached (tests and benchmarks).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_enabled(&self) -> bool {
        self.threshold > 0
    }

    /// What the manager holds (a snapshot: each shard is read under its own
    /// lock, not all at once).
    pub fn stats(&self) -> MemoryStats {
        let mut stats = MemoryStats {
            threshold: self.threshold,
            ..Default::default()
        };
        for cell in &self.shards {
            let shard = lock(&cell.0.state);
            for (class, list) in shard.free.iter().enumerate() {
                stats.cached_blocks += list.len();
                stats.cached_bytes += list.len() * SizeClass::from_index(class).size;
            }
            stats.live_blocks += shard.managed_blocks;
            stats.live_bytes += shard.managed_bytes;
        }
        stats
    }

    /// The size class of a block that is cached when freed; `None` for
    /// the others.
    fn managed_class(&self, size: usize, kind: AllocKind) -> Option<SizeClass> {
        if matches!(kind, AllocKind::Default | AllocKind::Device) && size <= self.threshold {
            SizeClass::of(size)
        } else {
            None
        }
    }

    /// Allocate `size` (> 0) bytes. A managed request takes a cached block
    /// of its size class if there is one, else the device allocates the
    /// class's size; for larger `Default`/`Device` requests the device
    /// allocates (after freeing the cache and retrying once if it is out of
    /// memory). `Host`/`Shared` requests go to the device as they are. The
    /// block is recorded live.
    #[cfg(any(test, feature = "internals"))]
    pub fn allocate(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr> {
        self.allocate_from(size, host_ptr, kind, crate::origin::AllocOrigin::Unknown)
    }

    /// [`MemoryManager::allocate`], recording where the allocation was made.
    pub fn allocate_from(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
        origin: crate::origin::AllocOrigin,
    ) -> Result<DevicePtr> {
        if size == 0 {
            return Err(Error::InvalidArgument("allocation of 0 bytes".into()));
        }
        let allocation = LiveAllocation { size, kind, origin };
        let class = self.managed_class(size, kind);
        let record = Record::new(allocation, class);
        let ptr = if let Some(class) = class {
            if let Some(ptr) = self.reuse(class.index, record) {
                tracing::trace!(size, ptr = ?ptr.as_ptr(), "reused a cached block");
                return Ok(ptr);
            }
            // An out-of-memory error names the size the caller asked for.
            self.allocate_or_free_and_retry(class.size, host_ptr, kind)
                .map_err(|e| match e {
                    Error::OutOfMemory { device, plugin, .. } => Error::OutOfMemory {
                        device,
                        plugin,
                        size,
                    },
                    other => other,
                })?
        } else if let AllocKind::Default | AllocKind::Device = kind {
            tracing::trace!(size, threshold = self.threshold, "unmanaged allocation");
            self.allocate_or_free_and_retry(size, host_ptr, kind)?
        } else {
            self.allocator.allocate(size, host_ptr, kind)?
        };
        self.record(ptr, record);
        Ok(ptr)
    }

    /// A cached block of `class`, recorded live as `record` under the
    /// same lock: from the shard this thread used last, else from any
    /// shard whose bitmap says it has one.
    fn reuse(&self, class: usize, record: Record) -> Option<DevicePtr> {
        let first = usize::from(SHARD_HINT.with(Cell::get)) % SHARDS;
        let others = (1..SHARDS).map(|i| (first + i) % SHARDS);
        for index in std::iter::once(first).chain(others) {
            let cell = &self.shards[index].0;
            if !cell.has(class) {
                continue;
            }
            let mut shard = lock(&cell.state);
            if let Some(ptr) = cell.pop(&mut shard, class) {
                shard.insert_live(ptr, record);
                drop(shard);
                if index != first {
                    SHARD_HINT.with(|h| h.set(index as u8));
                }
                return Some(ptr);
            }
        }
        None
    }

    /// Free `ptr`: a managed block goes back on its free list, anything else
    /// straight to the device. A pointer that is not live (never handed
    /// out, or already freed) is an [`Error::UnknownDevicePointer`] and
    /// changes nothing; if the device fails to free, the block stays live.
    /// Returns what was freed.
    pub fn free(&self, ptr: DevicePtr) -> Result<LiveAllocation> {
        let index = shard_of(ptr);
        let cell = &self.shards[index].0;
        let mut shard = lock(&cell.state);
        let Some(record) = shard.remove_live(ptr) else {
            drop(shard);
            return Err(self.unknown(ptr));
        };
        if record.is_managed() {
            cell.push(&mut shard, usize::from(record.class), ptr);
            drop(shard);
            SHARD_HINT.with(|h| h.set(index as u8));
            tracing::trace!(size = record.size, ptr = ?ptr.as_ptr(), "cached a freed block");
            return Ok(record.allocation());
        }
        drop(shard);
        match self.allocator.free(ptr) {
            Ok(()) => Ok(record.allocation()),
            Err(e) => {
                self.record(ptr, record);
                Err(e)
            }
        }
    }

    /// Free the live block `ptr` on the device now, bypassing the cache
    /// (shutdown frees the blocks the user still holds this way). Returns
    /// whether it was a managed block. A pointer that is not live is an
    /// [`Error::UnknownDevicePointer`]; if the device fails, the block
    /// stays live. Either way nothing else changes.
    pub fn release(&self, ptr: DevicePtr) -> Result<bool> {
        let record = self.unrecord(ptr)?;
        match self.allocator.free(ptr) {
            Ok(()) => Ok(record.is_managed()),
            Err(e) => {
                self.record(ptr, record);
                Err(e)
            }
        }
    }

    /// The live allocation at `ptr`, if any.
    pub fn allocation(&self, ptr: DevicePtr) -> Option<LiveAllocation> {
        lock(&self.shards[shard_of(ptr)].0.state)
            .live
            .get(ptr.addr())
            .map(Record::allocation)
    }

    /// Number and total bytes of the live allocations, managed or not.
    pub fn live_allocations(&self) -> (usize, usize) {
        self.shards.iter().fold((0, 0), |(count, bytes), cell| {
            let shard = lock(&cell.0.state);
            let shard_bytes: usize = shard.live.iter().map(|(_, r)| r.size).sum();
            (count + shard.live.len(), bytes + shard_bytes)
        })
    }

    /// Every live allocation, by address.
    pub fn live(&self) -> Vec<(DevicePtr, LiveAllocation)> {
        let mut all: Vec<_> = self
            .shards
            .iter()
            .flat_map(|cell| {
                let shard = lock(&cell.0.state);
                shard
                    .live
                    .iter()
                    .map(|(addr, r)| (DevicePtr::from_raw(addr as *mut c_void), r.allocation()))
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by_key(|(ptr, _)| ptr.addr());
        all
    }

    /// Return every cached block to the device, in address order (see
    /// [`DeviceAllocator::free_many`]).
    pub fn drain(&self) -> DrainOutcome {
        let mut taken = Vec::with_capacity(self.shards.len());
        for cell in &self.shards {
            taken.push({
                let mut shard = lock(&cell.0.state);
                for (class, list) in shard.free.iter().enumerate() {
                    if !list.is_empty() {
                        cell.0.set(class, false);
                    }
                }
                std::mem::take(&mut shard.free)
            });
        }
        let total = taken.iter().flatten().map(Vec::len).sum();
        let mut blocks: Vec<(DevicePtr, usize)> = Vec::with_capacity(total);
        for lists in taken {
            for (class, list) in lists.into_iter().enumerate() {
                let size = SizeClass::from_index(class).size;
                blocks.extend(list.into_iter().map(|ptr| (ptr, size)));
            }
        }
        // Address order: the order in which a `free` that walks a heap
        // (the host plugin's malloc) touches the least memory.
        blocks.sort_unstable_by_key(|&(ptr, _)| ptr.addr());
        let ptrs: Vec<DevicePtr> = blocks.iter().map(|&(ptr, _)| ptr).collect();
        let mut failed = self.allocator.free_many(&ptrs);
        failed.sort_by_key(|&(index, _)| index);
        let mut failed = failed.into_iter().peekable();
        let mut outcome = DrainOutcome::default();
        for (index, (ptr, size)) in blocks.into_iter().enumerate() {
            match failed.next_if(|(i, _)| *i == index) {
                Some((_, e)) => outcome.failed.push((ptr, size, e)),
                None => {
                    outcome.blocks += 1;
                    outcome.bytes += size;
                }
            }
        }
        // Earlier retries' failures first: they happened first.
        let mut earlier = std::mem::take(&mut *lock(&self.retry_failures));
        earlier.append(&mut outcome.failed);
        outcome.failed = earlier;
        outcome
    }

    /// Record `ptr` as handed out.
    fn record(&self, ptr: DevicePtr, record: Record) {
        lock(&self.shards[shard_of(ptr)].0.state).insert_live(ptr, record);
    }

    /// Forget the live block `ptr`, or say it is not live.
    fn unrecord(&self, ptr: DevicePtr) -> Result<Record> {
        let removed = lock(&self.shards[shard_of(ptr)].0.state).remove_live(ptr);
        removed.ok_or_else(|| self.unknown(ptr))
    }

    fn unknown(&self, ptr: DevicePtr) -> Error {
        Error::UnknownDevicePointer {
            device: self.allocator.device_number(),
            ptr: ptr.addr(),
        }
    }

    fn allocate_or_free_and_retry(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr> {
        match self.allocator.allocate(size, host_ptr, kind) {
            Err(Error::OutOfMemory { .. }) => {
                let mut drained = self.drain();
                tracing::debug!(
                    size,
                    freed_blocks = drained.blocks,
                    freed_bytes = drained.bytes,
                    "device out of memory: freed the cache, retrying once"
                );
                if !drained.failed.is_empty() {
                    tracing::warn!(
                        blocks = drained.failed.len(),
                        "the device failed to free cached blocks while the cache was \
                         drained for an out-of-memory retry; the shutdown report lists them"
                    );
                    lock(&self.retry_failures).append(&mut drained.failed);
                }
                self.allocator.allocate(size, host_ptr, kind)
            }
            other => other,
        }
    }
}

/// The size class of a managed block: its index among the free lists and
/// the size the device allocates for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SizeClass {
    index: usize,
    size: usize,
}

impl SizeClass {
    /// Classes of 16, 32, 48 and 64 bytes, then four per power of two
    /// (80, 96, 112, 128, 160, ...). `None` for 0 and for sizes whose class
    /// would not fit in `usize`.
    fn of(size: usize) -> Option<SizeClass> {
        if size == 0 {
            return None;
        }
        if size <= 64 {
            let steps = size.div_ceil(16);
            return Some(SizeClass {
                index: steps - 1,
                size: steps * 16,
            });
        }
        let below = size - 1;
        let log = below.ilog2() as usize; // >= 6
        let step = 1usize << (log - 2);
        let quarter = below / step; // 4..=7
        Some(SizeClass {
            index: 4 + (log - 6) * 4 + (quarter - 4),
            size: (quarter + 1).checked_mul(step)?,
        })
    }

    /// The class with this index (the inverse of [`SizeClass::of`]).
    fn from_index(index: usize) -> SizeClass {
        if index < 4 {
            return SizeClass {
                index,
                size: (index + 1) * 16,
            };
        }
        let log = 6 + (index - 4) / 4;
        let quarter = 4 + (index - 4) % 4;
        SizeClass {
            index,
            size: (quarter + 1) << (log - 2),
        }
    }
}

#[cfg(test)]
mod tests {
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
}
