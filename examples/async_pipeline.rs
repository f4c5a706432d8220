//! An asynchronous pipeline: chunks of a large array go through two queues
//! on two devices. Queue A copies a chunk in and scales it on device 0,
//! then copies it to device 1; queue B waits for A's event and scales it
//! again on device 1, then copies it out. While B works on chunk k, A may
//! already work on chunk k+1.
//!
//! ```text
//! cargo run --example async_pipeline
//! ```
//!
//! Everything a queue borrows (host vectors, device buffers, kernels) is
//! declared before `omptarget::scope`, which waits for every queue before
//! it returns; buffers the queues write are lent to the scope
//! (`Scope::bind`). On the host plugin every queued operation completes at once;
//! on a GPU each queue is a stream.
use anyhow::{bail, Result};
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime, Slice, SliceMut};
use omptarget_test_support::clang::example_kernel;

/// `void scale(float a, const float *x, size_t nx, float *y, size_t ny)`.
type Scale = (f32, Slice<f32>, SliceMut<f32>);

const CHUNKS: usize = 8;
const CHUNK: usize = 1 << 16;

fn main() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let kernel = example_kernel("typed.c", scratch.path()).map_err(anyhow::Error::msg)?;
    let runtime = Runtime::new(Config::default())?;
    let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
    // SAFETY: the example's kernel object: no initialiser or finaliser.
    let image0 = unsafe { Image::load_file(d0, &kernel, &["scale"]) }?;
    // SAFETY: the example's kernel object: no initialiser or finaliser.
    let image1 = unsafe { Image::load_file(d1, &kernel, &["scale"]) }?;
    // SAFETY: scale's C parameters are `Scale`, and it touches only the
    // values below the lengths it is given.
    let (scale0, scale1): (Kernel<Scale>, Kernel<Scale>) =
        unsafe { (image0.kernel("scale")?, image1.kernel("scale")?) };

    let input: Vec<f32> = (0..CHUNKS * CHUNK).map(|i| (i % 1000) as f32).collect();
    let mut output = vec![0f32; CHUNKS * CHUNK];
    // One set of device buffers per chunk: a queue keeps what it uses
    // borrowed until the scope ends.
    let mut buffers = Vec::new();
    for _ in 0..CHUNKS {
        buffers.push((
            DeviceBuffer::<f32>::new(d0, CHUNK)?,
            DeviceBuffer::<f32>::new(d0, CHUNK)?,
            DeviceBuffer::<f32>::new(d1, CHUNK)?,
            DeviceBuffer::<f32>::new(d1, CHUNK)?,
        ));
    }
    omptarget::scope(|s| {
        let (a, b) = (s.queue(d0)?, s.queue(d1)?);
        for ((input, output), (x0, y0, x1, y1)) in input
            .chunks(CHUNK)
            .zip(output.chunks_mut(CHUNK))
            .zip(&mut buffers)
        {
            // Written by the queues: lent to the scope until it ends.
            let (x0, y0, x1, y1) = (s.bind(x0), s.bind(y0), s.bind(x1), s.bind(y1));
            a.copy_from_host(x0, input)?;
            a.launch(&scale0, LaunchConfig::default(), (2.0f32, x0, y0))?;
            a.copy_from(x1, y0)?;
            let ready = a.record_event()?;
            b.wait_for(&ready)?;
            b.launch(&scale1, LaunchConfig::default(), (10.0f32, x1, y1))?;
            b.copy_to_host(y1, output)?;
        }
        Ok(())
    })?;

    let wrong = output
        .iter()
        .zip(&input)
        .filter(|(y, x)| **y != 20.0 * **x)
        .count();
    println!(
        "{} values through {CHUNKS} chunks on 2 devices, {wrong} wrong",
        input.len()
    );
    drop((buffers, image0, image1));
    let report = runtime.shutdown();
    print!("{report}");
    if wrong > 0 || !report.is_clean() {
        bail!("async_pipeline failed");
    }
    Ok(())
}
