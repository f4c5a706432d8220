//! One runtime, several devices, one thread per device: each thread loads
//! the kernel on its device and scales its own slice of the data.
//!
//! ```text
//! cargo run --example multi_device_threads
//! ```
//!
//! A `Runtime` is `Send + Sync`; buffers, images and kernels borrow it, so
//! scoped threads (`std::thread::scope`) can use them and the borrow
//! checker proves none outlives `shutdown`.
use anyhow::{bail, Result};
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime, Slice, SliceMut};
use omptarget_test_support::clang::example_kernel;

/// `void scale(float a, const float *x, size_t nx, float *y, size_t ny)`.
type Scale = (f32, Slice<f32>, SliceMut<f32>);

fn main() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let kernel = example_kernel("typed.c", scratch.path()).map_err(anyhow::Error::msg)?;
    let runtime = Runtime::new(Config::default())?;
    let devices = runtime.device_count();
    let n: usize = 100_000;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let chunk = n.div_ceil(devices);

    let results: Vec<Result<Vec<f32>>> = std::thread::scope(|s| {
        let workers: Vec<_> = data
            .chunks(chunk)
            .enumerate()
            .map(|(d, part)| {
                let (runtime, kernel) = (&runtime, &kernel);
                s.spawn(move || -> Result<Vec<f32>> {
                    let device = runtime.device(d)?;
                    // SAFETY: the example's kernel object: no initialiser or finaliser.
                    let image = unsafe { Image::load_file(device, kernel, &["scale"]) }?;
                    // SAFETY: scale's C parameters are `Scale`; it touches
                    // only the values below the lengths it is given.
                    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
                    let x = DeviceBuffer::from_slice(device, part)?;
                    let mut y = DeviceBuffer::<f32>::new(device, part.len())?;
                    scale.launch(LaunchConfig::default(), (3.0f32, &x, &mut y))?;
                    println!("device {d}: {} values", part.len());
                    Ok(y.to_vec()?)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .collect()
    });

    let mut scaled = Vec::with_capacity(n);
    for part in results {
        scaled.extend(part?);
    }
    let wrong = scaled
        .iter()
        .zip(&data)
        .filter(|(y, x)| **y != 3.0 * **x)
        .count();
    println!("{n} values on {devices} devices, {wrong} wrong");
    let report = runtime.shutdown();
    print!("{report}");
    if wrong > 0 || !report.is_clean() {
        bail!("multi_device_threads failed");
    }
    Ok(())
}
