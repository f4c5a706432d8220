//! The Rust API's per-call costs on the built-in host plugin: a buffer
//! allocated and freed, a small copy each way, typed launches by arity,
//! and `Runtime::shutdown` with 100k cached blocks (the bound:
//! 20 ms). `cargo bench --bench rust_api`; `cargo test --benches` runs each
//! once (CI's quick mode).
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, PtrMut, Runtime};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `tests/kernels/bench_args.c` built as a shared object in `dir`.
fn kernels(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/bench_args.c");
    let out = dir.join("bench_args.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("running cc");
    assert!(status.success(), "{cc} failed on {}", src.display());
    out
}

type Args1 = (PtrMut<i32>,);
type Args8 = (PtrMut<i32>, i32, i32, i32, i32, i32, i32, i32);
type Args12 = (
    PtrMut<i32>,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
);

fn buffers_and_copies(c: &mut Criterion) {
    let runtime = Runtime::new(Config::default()).expect("runtime");
    let device = runtime.device(0).expect("device 0");
    c.bench_function("DeviceBuffer::<u8>::new(64) + drop", |b| {
        b.iter(|| black_box(DeviceBuffer::<u8>::new(device, 64).unwrap()))
    });
    c.bench_function("DeviceBuffer::<u8>::new(4096) + drop", |b| {
        b.iter(|| black_box(DeviceBuffer::<u8>::new(device, 4096).unwrap()))
    });
    let mut buffer = DeviceBuffer::<u8>::new(device, 64).unwrap();
    let host = [7u8; 64];
    let mut back = [0u8; 64];
    c.bench_function("copy_from_host 64 B", |b| {
        b.iter(|| buffer.copy_from_host(black_box(&host)).unwrap())
    });
    // Filled here too: a filter may skip the bench above.
    buffer.copy_from_host(&host).unwrap();
    c.bench_function("copy_to_host 64 B", |b| {
        b.iter(|| buffer.copy_to_host(black_box(&mut back)).unwrap())
    });
    buffer.copy_to_host(&mut back).unwrap();
    assert_eq!(back, host);
    drop(buffer);
    assert!(runtime.shutdown().is_clean());
}

fn launches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let so = kernels(dir.path());
    let runtime = Runtime::new(Config::default()).expect("runtime");
    let device = runtime.device(0).expect("device 0");
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, &so, &["args_1", "args_8", "args_12"]) }.expect("image");
    // SAFETY: the C signatures in bench_args.c are these tuples; each
    // kernel touches out[0] only, and `out` holds one value.
    let (k1, k8, k12): (Kernel<Args1>, Kernel<Args8>, Kernel<Args12>) = unsafe {
        (
            image.kernel("args_1").unwrap(),
            image.kernel("args_8").unwrap(),
            image.kernel("args_12").unwrap(),
        )
    };
    let mut out = DeviceBuffer::<i32>::new(device, 1).unwrap();
    out.copy_from_host(&[0]).unwrap();
    let config = LaunchConfig::default();
    // The kernels take a bare pointer (their cost, not a length slot, is
    // measured), so they launch unchecked: each touches out[0] only.
    // One launch outside the benches, so the check below holds whichever
    // of them a filter runs (`-- shutdown` runs none).
    // SAFETY: args_1 touches out[0], and `out` holds one value.
    unsafe { k1.launch_unchecked(config, (&mut out,)) }.unwrap();
    c.bench_function("launch 1 argument", |b| {
        // SAFETY: as above.
        b.iter(|| unsafe { k1.launch_unchecked(config, (&mut out,)) }.unwrap())
    });
    c.bench_function("launch 8 arguments", |b| {
        b.iter(|| {
            // SAFETY: args_8 touches out[0] only.
            unsafe { k8.launch_unchecked(config, (&mut out, 1, 1, 1, 1, 1, 1, 1)) }.unwrap()
        })
    });
    c.bench_function("launch 12 arguments", |b| {
        b.iter(|| {
            // SAFETY: args_12 touches out[0] only.
            unsafe { k12.launch_unchecked(config, (&mut out, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)) }
                .unwrap()
        })
    });
    assert!(out.to_vec().unwrap()[0] > 0, "the kernels ran");
    drop((out, image));
    assert!(runtime.shutdown().is_clean());
}

/// `Runtime::shutdown` of a runtime whose device 0 caches 100k small
/// blocks (freed buffers of 64 to 8192 bytes): the drain dominates.
fn shutdown_with_cached_blocks(c: &mut Criterion) {
    let mut group = c.benchmark_group("shutdown");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("Runtime::shutdown with 100k cached blocks", |b| {
        b.iter_batched(
            || {
                let runtime = Runtime::new(Config::default()).expect("runtime");
                {
                    let device = runtime.device(0).unwrap();
                    let live: Vec<_> = (0..100_000)
                        .map(|i| DeviceBuffer::<u8>::new(device, 64 << (i % 8)).unwrap())
                        .collect();
                    drop(live);
                    assert_eq!(device.memory_stats().cached_blocks, 100_000);
                }
                runtime
            },
            |runtime| {
                let report = runtime.shutdown();
                assert_eq!(report.blocks_freed, 100_000);
                report
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(
    benches,
    buffers_and_copies,
    launches,
    shutdown_with_cached_blocks
);
criterion_main!(benches);
