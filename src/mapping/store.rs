//! Where the mappings live, laid out so that an operation touches few
//! cache lines when the table outgrows the caches. At 100k mappings a
//! `BTreeMap<usize, MapEntry>` was ~14 MB of nodes holding whole entries,
//! six levels deep, and every level below the top few missed the cache
//! (and the TLB) on each lookup.
//!
//! * The host ranges, sorted by begin, in chunks of at most [`CHUNK_MAX`]:
//!   each chunk keeps its begins, ends and slot numbers in three arrays
//!   of one block.
//!   `firsts` (the first begin of each chunk) is small enough to stay
//!   cached (~2k words at 100k mappings), so a search is a binary search
//!   there, then one in a single chunk whose begins are asked for all at
//!   once (eight lines: one memory latency, not a chain of them).
//! * The entries themselves in `slots`, addressed by the chunks' slot
//!   numbers; a freed slot is reused first (its line is likely cached).
//!
//! Inserting or removing shifts at most one chunk's arrays; a chunk that
//! grows past [`CHUNK_MAX`] splits in two, one that shrinks below
//! [`CHUNK_MIN`] merges with a neighbour when both fit in one, so there are
//! at most about `4n / CHUNK_MAX` chunks and every operation stays
//! O(log n + CHUNK_MAX + n / CHUNK_MAX), the last term a `memmove` of
//! words done only at a split or merge.
//!
//! An entry's host range never changes while it is stored (callers of
//! [`Entries::get_mut`] change counts only): the chunks keep a copy of it.

use super::entry::{EntryShared, MapEntry};
use super::lookup::{classify, classify_zero_length, LookupResult, ZeroLength};
use std::sync::Arc;

/// Most ranges in one chunk at rest (one more while an insert splits it):
/// its begins fill eight cache lines.
const CHUNK_MAX: usize = 63;
/// Room in a chunk's arrays.
const CHUNK_ROOM: usize = CHUNK_MAX + 1;
/// Below this a chunk merges with a neighbour it fits with.
const CHUNK_MIN: usize = CHUNK_MAX / 4;
/// Slab slots an emptied table keeps (see `remove_known`).
const SLAB_KEPT: usize = 64;

/// Ask the CPU for the cache lines of `words` (a chunk's begins) at once,
/// so that a binary search over them waits for one memory latency rather
/// than one per step. A prefetch never faults and changes nothing.
#[inline]
fn prefetch_words(words: &[usize]) {
    #[cfg(target_arch = "x86_64")]
    for line in words.chunks(8) {
        // SAFETY: SSE is part of the x86_64 baseline (the feature the
        // intrinsic needs); the address is inside `words`, and a prefetch
        // reads nothing the program sees.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = words;
}

/// Ask the CPU for the first lines of host data about to be copied
/// (`[addr, addr+len)`, at most four lines), so that the wait for them
/// overlaps the table's own. A prefetch never faults, whatever the address.
#[inline]
pub(crate) fn prefetch_host(addr: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for offset in (0..len.min(256)).step_by(64) {
        // SAFETY: SSE is part of the x86_64 baseline; a prefetch reads
        // nothing the program sees and never faults.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                addr.wrapping_add(offset) as *const i8,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (addr, len);
}

/// The arrays of one chunk in one block (one or two pages, so a search
/// and the update after it cost few TLB misses), begins first and
/// line-aligned.
#[derive(Debug)]
#[repr(C, align(64))]
struct ChunkData {
    begins: [usize; CHUNK_ROOM],
    ends: [usize; CHUNK_ROOM],
    slots: [u32; CHUNK_ROOM],
}

/// Consecutive ranges, sorted by begin; never empty while stored. The
/// length lives here, in the cached array of chunks, not in the block: a
/// search then waits for the begins only, not for another line first.
#[derive(Debug)]
struct Chunk {
    data: Box<ChunkData>,
    len: usize,
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            data: Box::new(ChunkData {
                begins: [0; CHUNK_ROOM],
                ends: [0; CHUNK_ROOM],
                slots: [0; CHUNK_ROOM],
            }),
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn begins(&self) -> &[usize] {
        &self.data.begins[..self.len]
    }

    fn begin(&self, at: usize) -> usize {
        self.begins()[at]
    }

    fn end(&self, at: usize) -> usize {
        self.data.ends[..self.len][at]
    }

    fn slot(&self, at: usize) -> u32 {
        self.data.slots[..self.len][at]
    }

    fn set_end(&mut self, at: usize, end: usize) {
        self.data.ends[..self.len][at] = end;
    }

    fn slots(&self) -> &[u32] {
        &self.data.slots[..self.len]
    }

    /// Insert at `at` (at most `len`); the chunk must have room.
    fn insert(&mut self, at: usize, begin: usize, end: usize, slot: u32) {
        let (d, len) = (&mut *self.data, self.len);
        assert!(at <= len && len < CHUNK_ROOM, "chunk insert out of range");
        d.begins.copy_within(at..len, at + 1);
        d.ends.copy_within(at..len, at + 1);
        d.slots.copy_within(at..len, at + 1);
        d.begins[at] = begin;
        d.ends[at] = end;
        d.slots[at] = slot;
        self.len = len + 1;
    }

    fn remove(&mut self, at: usize) -> u32 {
        let (d, len) = (&mut *self.data, self.len);
        let slot = d.slots[..len][at];
        d.begins.copy_within(at + 1..len, at);
        d.ends.copy_within(at + 1..len, at);
        d.slots.copy_within(at + 1..len, at);
        self.len = len - 1;
        slot
    }

    /// Move the ranges from `at` on into a new chunk.
    fn split_off(&mut self, at: usize) -> Chunk {
        let mut upper = Chunk::new();
        upper.append_from(self, at);
        self.len = at;
        upper
    }

    /// Append the ranges of `other` from `from` on, which all start after
    /// ours; they must fit.
    fn append_from(&mut self, other: &Chunk, from: usize) {
        let (d, o) = (&mut *self.data, &*other.data);
        let (len, n) = (self.len, other.len - from);
        assert!(len + n <= CHUNK_ROOM, "chunk append out of room");
        d.begins[len..len + n].copy_from_slice(&o.begins[from..other.len]);
        d.ends[len..len + n].copy_from_slice(&o.ends[from..other.len]);
        d.slots[len..len + n].copy_from_slice(&o.slots[from..other.len]);
        self.len = len + n;
    }

    /// Position of the first range starting after `key` (its begins asked
    /// for all at once first).
    fn after(&self, key: usize) -> usize {
        let begins = self.begins();
        prefetch_words(begins);
        begins.partition_point(|&b| b <= key)
    }
}

/// Where a begin address falls among the stored ranges: its chunk (the
/// last whose first begin is at or below it; `None` below every begin)
/// and the index of the first range there starting after it. Valid until
/// the next insert or remove; [`Entries::insert_at`] checks it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Position {
    chunk: Option<usize>,
    after: usize,
}

/// One entry of the slab, alone on its cache line: an entry is 64 bytes,
/// so reading one costs one line, not two.
#[derive(Debug)]
#[repr(align(64))]
struct Slot(Option<MapEntry>);

/// The mappings of one table, keyed by host begin address.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    /// The first begin of each chunk, ascending.
    firsts: Vec<usize>,
    chunks: Vec<Chunk>,
    len: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// The last chunk emptied or merged away, kept for the next chunk made:
    /// a table that empties and fills again (one mapping entered and
    /// exited per region) would otherwise free and allocate a 1.3 KB chunk
    /// each time, and glibc's malloc sorts its bins on every such "large"
    /// request (callgrind, `map_tofrom_scalar`: ~700 instructions per op).
    spare: Option<Chunk>,
    /// The shared state of the last entry removed while nothing else held
    /// it, for the next new entry: one `malloc` and `free` fewer per
    /// mapping made and removed (callgrind, `map_tofrom_scalar`). Reused
    /// only if it is still the only reference then.
    spare_shared: Option<Arc<EntryShared>>,
}

impl Entries {
    /// The chunk holding the last range starting at or before `key`; `None`
    /// when every range starts after `key`.
    fn chunk_at_or_before(&self, key: usize) -> Option<usize> {
        self.firsts.partition_point(|&f| f <= key).checked_sub(1)
    }

    /// Where `begin` falls: one search.
    pub fn position(&self, begin: usize) -> Position {
        match self.chunk_at_or_before(begin) {
            Some(c) => Position {
                chunk: Some(c),
                after: self.chunks[c].after(begin),
            },
            None => Position {
                chunk: None,
                after: 0,
            },
        }
    }

    /// (chunk, index) of the range starting at `begin`, which falls at `at`.
    fn exact(&self, at: Position, begin: usize) -> Option<(usize, usize)> {
        let c = at.chunk?;
        let i = at.after.checked_sub(1)?;
        (self.chunks[c].begin(i) == begin).then_some((c, i))
    }

    /// (chunk, index) of the range starting at `begin`.
    fn find(&self, begin: usize) -> Option<(usize, usize)> {
        self.exact(self.position(begin), begin)
    }

    fn slot_of(&self, begin: usize) -> Option<u32> {
        let (c, at) = self.find(begin)?;
        Some(self.chunks[c].slot(at))
    }

    /// `at` is what `position(begin)` gives now (debug checks).
    fn is_position_of(&self, at: Position, begin: usize) -> bool {
        let now = self.position(begin);
        (now.chunk, now.after) == (at.chunk, at.after)
    }

    /// The entry starting at `begin`, which falls at `at` (`position`,
    /// nothing changed since), to change its counts (not its range).
    pub fn get_mut_at(&mut self, at: Position, begin: usize) -> Option<&mut MapEntry> {
        debug_assert!(self.is_position_of(at, begin), "a stale position");
        let (c, i) = self.exact(at, begin)?;
        let slot = self.chunks[c].slot(i);
        self.slots[slot as usize].0.as_mut()
    }

    /// The entry starting at `begin`.
    pub fn get(&self, begin: &usize) -> Option<&MapEntry> {
        let slot = self.slot_of(*begin)?;
        self.slots[slot as usize].0.as_ref()
    }

    /// The entry starting at `begin`, to change its counts (not its range).
    pub fn get_mut(&mut self, begin: &usize) -> Option<&mut MapEntry> {
        let slot = self.slot_of(*begin)?;
        self.slots[slot as usize].0.as_mut()
    }

    /// Store `entry` under `begin` (its host begin), replacing and
    /// returning the entry stored there before, as `BTreeMap::insert` does.
    pub fn insert(&mut self, begin: usize, entry: MapEntry) -> Option<MapEntry> {
        let at = self.position(begin);
        self.insert_known(at, begin, entry)
    }

    /// [`Entries::insert`] at the position a search found before
    /// (`position`): no second search when nothing changed since. A stale
    /// position (the table changed) is noticed and searched again.
    pub fn insert_at(&mut self, at: Position, begin: usize, entry: MapEntry) -> Option<MapEntry> {
        let at = if self.holds(at, begin) {
            at
        } else {
            self.position(begin)
        };
        self.insert_known(at, begin, entry)
    }

    /// Is `at` still where `begin` falls? Reads only lines its search read.
    fn holds(&self, at: Position, begin: usize) -> bool {
        let Some(c) = at.chunk else {
            return self.firsts.first().is_none_or(|&first| first > begin);
        };
        let Some(chunk) = self.chunks.get(c) else {
            return false;
        };
        self.firsts[c] <= begin
            && self.firsts.get(c + 1).is_none_or(|&next| next > begin)
            && (1..=chunk.len()).contains(&at.after)
            && chunk.begin(at.after - 1) <= begin
            && (at.after == chunk.len() || chunk.begin(at.after) > begin)
    }

    /// The insert at the position `begin` falls at.
    fn insert_known(&mut self, at: Position, begin: usize, entry: MapEntry) -> Option<MapEntry> {
        debug_assert_eq!(begin, entry.host_begin);
        let end = entry.host_end;
        if let Some((c, i)) = self.exact(at, begin) {
            let chunk = &mut self.chunks[c];
            chunk.set_end(i, end);
            return self.slots[chunk.slot(i) as usize].0.replace(entry);
        }
        // The only check that may fail comes before any change.
        let slot = match self.free.last() {
            Some(&slot) => slot,
            None => u32::try_from(self.slots.len()).expect("fewer than 2^32 mappings"),
        };
        match at.chunk {
            Some(c) => {
                self.chunks[c].insert(at.after, begin, end, slot);
                if self.chunks[c].len() > CHUNK_MAX {
                    let upper = self.chunks[c].split_off(CHUNK_MAX / 2);
                    self.firsts.insert(c + 1, upper.begin(0));
                    self.chunks.insert(c + 1, upper);
                }
            }
            // Below every begin: the new first range of the first chunk,
            // or of a new chunk when there is none (or the first is full).
            None => match self.chunks.first_mut() {
                Some(first) if first.len() < CHUNK_MAX => {
                    first.insert(0, begin, end, slot);
                    self.firsts[0] = begin;
                }
                _ => {
                    let mut chunk = self.spare.take().unwrap_or_else(Chunk::new);
                    chunk.insert(0, begin, end, slot);
                    self.firsts.insert(0, begin);
                    self.chunks.insert(0, chunk);
                }
            },
        }
        self.len += 1;
        if self.free.pop().is_some() {
            self.slots[slot as usize] = Slot(Some(entry));
        } else {
            self.slots.push(Slot(Some(entry)));
        }
        None
    }

    /// Remove and return the entry starting at `begin`.
    pub fn remove(&mut self, begin: &usize) -> Option<MapEntry> {
        let (c, at) = self.find(*begin)?;
        self.remove_known(c, at)
    }

    /// [`Entries::remove`] at the position a search found before
    /// (`position`); a stale one is noticed and searched again.
    pub fn remove_at(&mut self, at: Position, begin: usize) -> Option<MapEntry> {
        let (c, i) = if self.holds(at, begin) {
            self.exact(at, begin)?
        } else {
            self.find(begin)?
        };
        self.remove_known(c, i)
    }

    /// Remove the range at index `at` of chunk `c`, and its entry.
    fn remove_known(&mut self, c: usize, at: usize) -> Option<MapEntry> {
        let slot = self.chunks[c].remove(at);
        self.len -= 1;
        if self.chunks[c].len() == 0 {
            self.spare = Some(self.chunks.remove(c));
            self.firsts.remove(c);
        } else {
            self.firsts[c] = self.chunks[c].begin(0);
            if self.chunks[c].len() < CHUNK_MIN {
                self.merge_around(c);
            }
        }
        self.free.push(slot);
        let entry = self.slots[slot as usize].0.take();
        if let Some(entry) = &entry {
            if Arc::strong_count(&entry.shared) == 1 && Arc::weak_count(&entry.shared) == 0 {
                self.spare_shared = Some(Arc::clone(&entry.shared));
            }
        }
        if self.len == 0 {
            // Empty: give back the slab of a table that once held many
            // (64 bytes a slot), keeping room for a few, so that a table
            // that empties after every region allocates nothing.
            self.slots.clear();
            self.free.clear();
            self.slots.shrink_to(SLAB_KEPT);
            self.free.shrink_to(SLAB_KEPT);
        }
        entry
    }

    /// Shared state for a new entry: the last removed entry's when no one
    /// else holds it any more (reset), else a new one.
    pub fn fresh_shared(&mut self, device_padding: usize) -> Arc<EntryShared> {
        if let Some(mut spare) = self.spare_shared.take() {
            if let Some(state) = Arc::get_mut(&mut spare) {
                *state = EntryShared::new(device_padding);
                return spare;
            }
        }
        Arc::new(EntryShared::new(device_padding))
    }

    /// Merge the small chunk `c` with a neighbour when both fit in one.
    fn merge_around(&mut self, c: usize) {
        let fits = |a: &Chunk, b: &Chunk| a.len() + b.len() <= CHUNK_MAX;
        if c + 1 < self.chunks.len() && fits(&self.chunks[c], &self.chunks[c + 1]) {
            let mut next = self.chunks.remove(c + 1);
            self.firsts.remove(c + 1);
            self.chunks[c].append_from(&next, 0);
            next.len = 0;
            self.spare = Some(next);
        } else if c > 0 && fits(&self.chunks[c - 1], &self.chunks[c]) {
            let mut this = self.chunks.remove(c);
            self.firsts.remove(c);
            self.chunks[c - 1].append_from(&this, 0);
            this.len = 0;
            self.spare = Some(this);
        }
    }

    /// LLVM's `lookupMapping` of `[begin, begin+size)` over the stored
    /// ranges: the two neighbours of `begin` come from one chunk search.
    pub fn lookup(&self, begin: usize, size: i64) -> LookupResult {
        self.lookup_at(self.position(begin), begin, size)
    }

    /// [`Entries::lookup`] at the position `begin` falls at (`position`,
    /// nothing changed since).
    pub fn lookup_at(&self, at: Position, begin: usize, size: i64) -> LookupResult {
        debug_assert!(self.is_position_of(at, begin), "a stale position");
        let Some(c) = at.chunk else {
            let right = self.chunks.first().map(|ch| (ch.begin(0), ch.end(0)));
            return classify(begin, size, None, || right);
        };
        let (chunk, after) = (&self.chunks[c], at.after);
        let left = Some((chunk.begin(after - 1), chunk.end(after - 1)));
        classify(begin, size, left, || {
            if after < chunk.len() {
                Some((chunk.begin(after), chunk.end(after)))
            } else {
                self.chunks.get(c + 1).map(|ch| (ch.begin(0), ch.end(0)))
            }
        })
    }

    /// [`Entries::lookup_at`], with a zero-length section matched under
    /// `rule` (LLVM 15+ match a pointer by the base of the mapping after it,
    /// which only the entry itself holds: read from the slab then).
    pub fn lookup_with(
        &self,
        at: Position,
        begin: usize,
        size: i64,
        rule: ZeroLength,
    ) -> LookupResult {
        if size != 0 || rule == ZeroLength::Section {
            return self.lookup_at(at, begin, size);
        }
        debug_assert!(self.is_position_of(at, begin), "a stale position");
        let base = |chunk: &Chunk, i: usize| {
            self.slots[chunk.slot(i) as usize]
                .0
                .as_ref()
                .expect("a chunk's slot holds its entry")
                .host_base
        };
        let right = |c: Option<usize>, after: usize| {
            let (chunk, i) = match c {
                Some(c) if after < self.chunks[c].len() => (&self.chunks[c], after),
                Some(c) => (self.chunks.get(c + 1)?, 0),
                None => (self.chunks.first()?, 0),
            };
            Some((chunk.begin(i), base(chunk, i)))
        };
        let left = at.chunk.map(|c| {
            let (chunk, i) = (&self.chunks[c], at.after - 1);
            (chunk.begin(i), chunk.end(i), base(chunk, i))
        });
        classify_zero_length(begin, rule, left, || right(at.chunk, at.after))
    }

    /// The entries in host address order.
    pub fn values(&self) -> impl Iterator<Item = &MapEntry> + '_ {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.slots().iter())
            .map(|&slot| {
                self.slots[slot as usize]
                    .0
                    .as_ref()
                    .expect("a chunk's slot holds its entry")
            })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::ops::Index<&usize> for Entries {
    type Output = MapEntry;
    fn index(&self, begin: &usize) -> &MapEntry {
        self.get(begin).expect("no entry at this begin")
    }
}

// The slab's lines hold one entry each only while an entry fits in one.
const _: () = assert!(std::mem::size_of::<Slot>() == 64);

#[cfg(test)]
mod tests;
