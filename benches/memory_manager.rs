//! The memory manager's hot path: a cached small block taken and returned,
//! against an allocator that costs what `malloc`/`free` cost (the host
//! plugin's device memory), and the same requests with caching disabled.
//! Both include the manager's live-allocation bookkeeping, which is also
//! the device's (a `Device` adds no table of its own).
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use omptarget::abi::AllocKind;
use omptarget::memory::{DeviceAllocator, MemoryManager, DEFAULT_THRESHOLD};
use omptarget::{DevicePtr, Error, Result};
use std::ffi::c_void;

/// Device memory = host heap, like the host plugin.
struct Malloc;

impl DeviceAllocator for Malloc {
    fn allocate(&self, size: usize, _: *mut c_void, _: AllocKind) -> Result<DevicePtr> {
        // SAFETY: plain malloc; freed in `free`.
        let p = unsafe { libc::malloc(size) };
        if p.is_null() {
            Err(Error::OutOfMemory {
                device: 0,
                plugin: "malloc".into(),
                size,
            })
        } else {
            Ok(DevicePtr::from_raw(p))
        }
    }
    fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: from `allocate`.
        unsafe { libc::free(ptr.as_ptr()) };
        Ok(())
    }
}

fn alloc_free(c: &mut Criterion) {
    for (name, threshold) in [("cached", DEFAULT_THRESHOLD), ("uncached", 0)] {
        let mm = MemoryManager::new(Malloc, threshold);
        c.bench_function(&format!("alloc+free 256 B {name}"), |b| {
            b.iter(|| {
                let p = mm
                    .allocate(256, std::ptr::null_mut(), AllocKind::Default)
                    .unwrap();
                mm.free(p).unwrap();
            })
        });
        c.bench_function(&format!("alloc 64 blocks then free {name}"), |b| {
            b.iter_batched(
                || Vec::with_capacity(64),
                |mut held: Vec<DevicePtr>| {
                    for i in 0..64 {
                        held.push(
                            mm.allocate(16 << (i % 8), std::ptr::null_mut(), AllocKind::Default)
                                .unwrap(),
                        );
                    }
                    for p in held {
                        mm.free(p).unwrap();
                    }
                },
                BatchSize::SmallInput,
            )
        });
        mm.drain();
    }
}

criterion_group!(benches, alloc_free);
criterion_main!(benches);
