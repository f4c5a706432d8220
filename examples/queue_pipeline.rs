//! A pipeline object: a long-lived queue, its device buffers and its
//! kernel in one struct, fed batch after batch, timed with events, and
//! moved to a worker thread. Views split each batch in two halves that
//! one launch scales by different factors.
//!
//! ```text
//! cargo run --example queue_pipeline
//! ```
//!
//! The queue lives as long as the struct (a CUDA stream on a GPU, reused
//! for every batch). Each batch's copies and launches borrow the caller's
//! memory, so they are queued inside `omptarget::scope` with the queue
//! attached (`Scope::attach`): the scope waits for them before `run`
//! returns.
use anyhow::{bail, Result};
use omptarget::{
    Config, DeviceBuffer, Image, Kernel, LaunchConfig, Queue, Runtime, Slice, SliceMut,
};
use omptarget_test_support::clang::example_kernel;
use std::time::Duration;

/// `void scale(float a, const float *x, size_t nx, float *y, size_t ny)`.
type Scale = (f32, Slice<f32>, SliceMut<f32>);

const BATCH: usize = 1 << 16;

/// Everything one stage of the pipeline keeps between batches.
struct Stage<'rt, 'img> {
    queue: Queue<'rt>,
    input: DeviceBuffer<'rt, f32>,
    output: DeviceBuffer<'rt, f32>,
    scale: Kernel<'img, Scale>,
    busy: Duration,
}

impl Stage<'_, '_> {
    /// `batch[..half] * 2` and `batch[half..] * 3`, into `out`.
    fn run(&mut self, batch: &[f32], out: &mut [f32]) -> omptarget::Result<()> {
        let half = batch.len() / 2;
        let (queue, input, output, scale) = (
            &mut self.queue,
            &mut self.input,
            &mut self.output,
            &self.scale,
        );
        let mut timing = None;
        omptarget::scope(|s| {
            let q = s.attach(queue);
            let (x, y) = (s.bind(input), s.bind(output));
            let start = q.record_event()?;
            q.copy_from_host(x, batch)?;
            // Views: each half of the input scaled into its half of the output.
            q.launch(
                scale,
                LaunchConfig::default(),
                (2.0f32, x.slice(..half)?, y.slice(..half)?),
            )?;
            q.launch(
                scale,
                LaunchConfig::default(),
                (3.0f32, x.slice(half..)?, y.slice(half..)?),
            )?;
            q.copy_to_host(y, out)?;
            let end = q.record_event()?;
            timing = Some((start, end));
            Ok(())
        })?;
        if let Some((start, end)) = timing {
            self.busy += end.elapsed_since(&start)?;
        }
        Ok(())
    }
}

fn main() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let kernel = example_kernel("typed.c", scratch.path()).map_err(anyhow::Error::msg)?;
    let runtime = Runtime::new(Config::default())?;
    let device = runtime.device(0)?;
    // SAFETY: the example's kernel object: no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, &kernel, &["scale"]) }?;
    // SAFETY: scale's C parameters are `Scale`, and it touches only the
    // values below the lengths it is given.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut stage = Stage {
        queue: device.queue()?,
        input: DeviceBuffer::new(device, BATCH)?,
        output: DeviceBuffer::new(device, BATCH)?,
        scale,
        busy: Duration::ZERO,
    };
    let batch: Vec<f32> = (0..BATCH).map(|i| (i % 100) as f32).collect();
    let mut out = vec![0f32; BATCH];
    let mut wrong = 0;
    // Four batches here, four more on a worker thread: the stage (its
    // queue included) is `Send`.
    for _ in 0..4 {
        stage.run(&batch, &mut out)?;
        wrong += check(&batch, &out);
    }
    let (mut stage, more) = std::thread::scope(|t| {
        t.spawn(move || -> omptarget::Result<(Stage<'_, '_>, usize)> {
            let mut wrong = 0;
            let mut out = vec![0f32; BATCH];
            for _ in 0..4 {
                stage.run(&batch, &mut out)?;
                wrong += check(&batch, &out);
            }
            Ok((stage, wrong))
        })
        .join()
        .expect("the worker does not panic")
    })?;
    wrong += more;
    stage.queue.synchronize()?;
    println!(
        "8 batches of {BATCH} values on device 0 ({}): {wrong} wrong, {:?} between the events",
        device.plugin_name(),
        stage.busy
    );
    drop(stage);
    drop(image);
    let report = runtime.shutdown();
    print!("{report}");
    if wrong > 0 || !report.is_clean() {
        bail!("queue_pipeline failed");
    }
    Ok(())
}

/// How many values of `out` are not `batch` scaled by 2 (first half) or
/// 3 (second half).
fn check(batch: &[f32], out: &[f32]) -> usize {
    let half = batch.len() / 2;
    (0..batch.len())
        .filter(|&i| out[i] != batch[i] * if i < half { 2.0 } else { 3.0 })
        .count()
}
