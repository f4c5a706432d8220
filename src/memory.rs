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
//! one uncontended lock (no process-wide counter). A cached block keeps its
//! entry in the table, marked cached: freeing it and handing it out again
//! each rewrite that entry in place instead of removing it from the table
//! and inserting it again. Why size classes, how the
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
/// A managed block on a free list keeps its entry with `size` 0 (no live
/// allocation has 0 bytes): [`Record::is_live`] tells the two apart.
#[derive(Clone, Copy)]
struct Record {
    /// The size the caller asked for; 0 while the block is cached.
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

    /// Handed out and not yet freed (not a cached block's entry).
    fn is_live(&self) -> bool {
        self.size != 0
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
/// one lock. Every block on a free list has an entry in `live`, marked
/// cached; no live entry's address is on a free list.
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
            // The device handed out an address that is still live (or
            // still cached: then it stays on its free list, and `take_cached`
            // skips it there since its entry is live): the old record is
            // gone, so its counts go (managed or not: the old and the new
            // record may differ in that); say so.
            if old.is_managed() && old.is_live() {
                self.managed_blocks -= 1;
                self.managed_bytes -= old.size;
            }
            tracing::warn!(ptr = ?ptr.as_ptr(), "the device returned an address that is already live");
        }
    }

    /// Forget the live block `ptr` (a cached block's entry is not live).
    #[inline]
    fn remove_live(&mut self, ptr: DevicePtr) -> Option<Record> {
        self.take_live(ptr, false, None)
    }

    /// Free the live block `ptr` in the table, in one probe: a managed
    /// block's entry is marked cached in place, an unmanaged one's removed.
    /// Returns its record; `None` (nothing changed) if it is not live.
    #[inline]
    fn free_live(&mut self, ptr: DevicePtr, size: Option<usize>) -> Option<Record> {
        self.take_live(ptr, true, size)
    }

    /// The live block `ptr`'s record, its entry removed, or (`cache`, for a
    /// managed block) kept and marked cached; `None` (nothing changed) if
    /// it is not live.
    // Always inlined: a call saved and restored six registers around a
    // probe of one or two slots (about 20 instructions per free).
    #[inline(always)]
    fn take_live(&mut self, ptr: DevicePtr, cache: bool, size: Option<usize>) -> Option<Record> {
        let record = self
            .live
            .update_or_remove(ptr.addr(), |entry| {
                let record = *entry;
                if !record.is_live() || size.is_some_and(|size| size != record.size) {
                    return (None, false);
                }
                let keep = cache && record.is_managed();
                if keep {
                    entry.size = 0;
                }
                (Some(record), !keep)
            })
            .flatten()?;
        if record.is_managed() {
            self.managed_blocks -= 1;
            self.managed_bytes -= record.size;
        }
        Some(record)
    }

    /// Mark the cached block `ptr` live as `record`, in place; false if
    /// its entry is not a cached block of `record`'s class (the device
    /// handed its address out again while it was cached, see `insert_live`,
    /// and it may since be cached again in another class: reviving it from
    /// this list would give a block smaller than asked for).
    #[inline]
    fn revive(&mut self, ptr: DevicePtr, record: Record) -> bool {
        match self.live.get_mut(ptr.addr()) {
            Some(entry) if !entry.is_live() && entry.class == record.class => {
                *entry = record;
                self.managed_blocks += 1;
                self.managed_bytes += record.size;
                true
            }
            _ => false,
        }
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

    /// Take a cached block of `class`, if this shard has one, and mark it
    /// live as `record`.
    fn take_cached(&self, shard: &mut Shard, class: usize, record: Record) -> Option<DevicePtr> {
        loop {
            let list = shard.free.get_mut(class)?;
            let ptr = list.pop()?;
            if list.is_empty() {
                self.set(class, false);
            }
            if shard.revive(ptr, record) {
                return Some(ptr);
            }
        }
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
            if let Some(ptr) = cell.take_cached(&mut shard, class, record) {
                drop(shard);
                if index != first {
                    SHARD_HINT.with(|h| h.set(index as u8));
                }
                return Some(ptr);
            }
        }
        None
    }

    /// [`MemoryManager::free_sized`] of any size (the manager's tests and
    /// benchmarks).
    #[cfg(any(test, feature = "internals"))]
    pub fn free(&self, ptr: DevicePtr) -> Result<LiveAllocation> {
        self.free_sized(ptr, None)
    }

    /// Free `ptr`: a managed block goes back on its free list, anything else
    /// straight to the device. A pointer that is not live (never handed
    /// out, or already freed), or (`size` given) whose live block is of
    /// another size, is an [`Error::UnknownDevicePointer`] and changes
    /// nothing; if the device fails to free, the block stays live. Returns
    /// what was freed. A caller that recorded the size it was given (the
    /// device's `free_sized`) frees with one lookup, and never a block of
    /// another size that took the address since.
    pub fn free_sized(&self, ptr: DevicePtr, size: Option<usize>) -> Result<LiveAllocation> {
        let index = shard_of(ptr);
        let cell = &self.shards[index].0;
        let mut shard = lock(&cell.state);
        let Some(record) = shard.free_live(ptr, size) else {
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
            .filter(|r| r.is_live())
            .map(Record::allocation)
    }

    /// Number and total bytes of the live allocations, managed or not.
    pub fn live_allocations(&self) -> (usize, usize) {
        self.shards.iter().fold((0, 0), |(count, bytes), cell| {
            let shard = lock(&cell.0.state);
            let live = shard.live.iter().filter(|(_, r)| r.is_live());
            let (shard_count, shard_bytes) =
                live.fold((0, 0), |(n, b), (_, r)| (n + 1, b + r.size));
            (count + shard_count, bytes + shard_bytes)
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
                    .filter(|(_, r)| r.is_live())
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
                let mut lists = std::mem::take(&mut shard.free);
                // The cached entries go with their blocks; an address that
                // is live again (see `insert_live`) keeps its entry and is
                // not freed here.
                for list in &mut lists {
                    list.retain(|&ptr| match shard.live.get(ptr.addr()) {
                        Some(r) if !r.is_live() => {
                            shard.live.remove(ptr.addr());
                            true
                        }
                        _ => false,
                    });
                }
                lists
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
mod tests;
