//! The per-device mapping table's hot paths at 1k, 10k and 100k mappings:
//! finding a mapped range, missing an absent one, and mapping then
//! unmapping a new range. The table keeps its mappings sorted in chunks
//! under a small array of the chunks' first begins (`src/mapping/store.rs`),
//! so each of these must grow with log n: 100x more mappings should cost a
//! few tens of nanoseconds more (cache misses of a larger table), not 100x.
//!
//! Addresses are visited in a scrambled order so that neither the branch
//! predictor nor the cache sees a sequential walk; at 100k mappings the
//! table (~10 MB with its entries) no longer fits in cache, so part of the
//! growth is cache misses on the chunk and the entry. `lookup_present_in_order`
//! walks the same 1000 consecutive mappings in address order at every size
//! (their chunks stay cached) to show the cost of the search alone.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use omptarget::mapping::{DeviceMemory, MapRequest, MappingTable, ZeroLength};
use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;

/// Table sizes compared.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Host address of mapping 0 (any non-null address; never dereferenced).
const BASE: usize = 0x1000_0000;
/// Each mapping is 64 bytes at a 128-byte stride, leaving a 64-byte gap
/// after each one for the "absent" and "insert" addresses.
const MAPPED: usize = 64;
const STRIDE: usize = 128;
/// Number of precomputed probe addresses (cycled through).
const PROBES: usize = 4096;
/// Mappings in the cache-resident hot set of `lookup_present_in_order`
/// (the smallest table size, so every size probes the same set).
const HOT: usize = 1_000;

/// Device memory that is only numbers: the table never dereferences device
/// addresses, and no data is copied (`to` is never set), so the benchmark
/// measures the table alone.
struct CountingMemory {
    next: Cell<usize>,
}

impl DeviceMemory for CountingMemory {
    fn alloc(&self, size: usize, _host_ptr: usize) -> Option<usize> {
        let device = self.next.get();
        self.next.set(device + size.max(1));
        Some(device)
    }
    fn free(&self, _device_ptr: usize) -> bool {
        true
    }
    unsafe fn submit(&self, _device: usize, _host: usize, _size: usize, _name: usize) -> bool {
        true
    }
}

fn memory() -> CountingMemory {
    CountingMemory {
        next: Cell::new(0x7000_0000_0000),
    }
}

fn map_request(host_begin: usize, size: usize) -> MapRequest {
    MapRequest {
        host_begin,
        host_base: host_begin,
        size: size as i64,
        update_refcount: true,
        ..MapRequest::default()
    }
}

/// A table holding `n` mappings of `MAPPED` bytes at `BASE + i * STRIDE`.
fn table_of(n: usize, memory: &CountingMemory) -> MappingTable {
    let table = MappingTable::new();
    for i in 0..n {
        let created = table.get_target_pointer(&map_request(BASE + i * STRIDE, MAPPED), memory);
        assert!(created.is_new, "mapping {i} was not created");
    }
    assert_eq!(table.len(), n);
    table
}

/// `PROBES` mapping indices in `0..n`, scrambled (xorshift64).
fn scrambled_indices(n: usize) -> Vec<usize> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    (0..PROBES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        })
        .collect()
}

fn mapping_table(c: &mut Criterion) {
    let mut group = c.benchmark_group("mapping_table");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    for n in SIZES {
        let memory = memory();
        let table = table_of(n, &memory);
        let indices = scrambled_indices(n);

        // A section inside a mapping (the common case of every map clause
        // of data already present).
        let present: Vec<usize> = indices.iter().map(|i| BASE + i * STRIDE + 16).collect();
        for &addr in &present {
            assert!(table.lookup(addr, 32).0.contained);
        }
        group.bench_with_input(BenchmarkId::new("lookup_present", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % PROBES;
                black_box(table.lookup(black_box(present[k]), 32))
            })
        });

        // The first `HOT` mappings in address order, at every size: a hot
        // set that stays in cache, so what grows with `n` is the search
        // alone (the depth of the search), without cache misses.
        let in_order: Vec<usize> = (0..PROBES)
            .map(|k| BASE + (k % HOT) * STRIDE + 16)
            .collect();
        group.bench_with_input(
            BenchmarkId::new("lookup_present_in_order", n),
            &n,
            |b, _| {
                let mut k = 0;
                b.iter(|| {
                    k = (k + 1) % PROBES;
                    black_box(table.lookup(black_box(in_order[k]), 32))
                })
            },
        );

        // A section in the gap after a mapping (first map of new data).
        let absent: Vec<usize> = indices.iter().map(|i| BASE + i * STRIDE + MAPPED).collect();
        for &addr in &absent {
            assert!(!table.lookup(addr, 32).0.overlaps());
        }
        group.bench_with_input(BenchmarkId::new("lookup_absent", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % PROBES;
                black_box(table.lookup(black_box(absent[k]), 32))
            })
        });

        // Map a new section in a gap and unmap it again (`target enter
        // data` + `target exit data` of new data, without the copies).
        group.bench_with_input(BenchmarkId::new("insert_remove", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % PROBES;
                let addr = absent[k];
                let mapped = table.get_target_pointer(&map_request(addr, 32), &memory);
                debug_assert!(mapped.is_new);
                let removed = table.dealloc_tgt_ptr(addr, 32, false, ZeroLength::Section, &memory);
                debug_assert!(matches!(removed, Ok(Some(_))));
                black_box(mapped.target)
            })
        });
        assert_eq!(table.len(), n, "insert_remove left mappings behind");
    }
    group.finish();
}

criterion_group!(benches, mapping_table);
criterion_main!(benches);
