//! Launch a near-empty kernel (`args_1` of `tests/kernels/bench_args.c`)
//! N times through the Rust API on the built-in host plugin: the driver of
//! BENCHMARKS.md's per-launch instruction count, run under callgrind at two
//! values of N so that start-up and shutdown cancel out.
//!
//! ```text
//! cargo build --release --example launch_loop
//! LAUNCHES=1000 valgrind --tool=callgrind target/release/examples/launch_loop
//! ```
use anyhow::Result;
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, PtrMut, Runtime};
use omptarget_test_support::clang::example_kernel;

fn main() -> Result<()> {
    // N in a variable: the first argument is the kernel's path, as in the
    // other examples (`example_kernel`).
    let n: usize = std::env::var("LAUNCHES")
        .ok()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1000);
    let scratch = tempfile::tempdir()?;
    let kernel = example_kernel("bench_args.c", scratch.path()).map_err(anyhow::Error::msg)?;
    let runtime = Runtime::new(Config::default())?;
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, &kernel, &["args_1"]) }?;
    // SAFETY: `void args_1(int32_t *out)`, which touches out[0] only.
    let k1: Kernel<(PtrMut<i32>,)> = unsafe { image.kernel("args_1")? };
    let mut out = DeviceBuffer::<i32>::new(device, 1)?;
    out.copy_from_host(&[0])?;
    for _ in 0..n {
        // SAFETY: args_1 touches out[0], and `out` holds one value.
        unsafe { k1.launch_unchecked(LaunchConfig::default(), (&mut out,)) }?;
    }
    assert_eq!(out.to_vec()?[0], n as i32);
    drop((out, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}
