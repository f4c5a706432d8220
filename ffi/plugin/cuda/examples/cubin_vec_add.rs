//! The Rust API on a GPU: load a cubin (`scripts/gpu/vec_add.cu`, built by
//! `scripts/gpu-build.sh`) on the CUDA plugin's device 0, run it on a queue
//! and blocking, and compare the results with the host's.
//!
//! ```text
//! cubin_vec_add PLUGIN_DIR VEC_ADD_CUBIN
//! ```
//!
//! Prints one line and exits 0 when every value matches; 1 otherwise.
//! `scripts/gpu-check.sh` runs it, also under compute-sanitizer.

use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Ptr, PtrMut, Runtime};
use std::path::Path;

/// `void vec_add(const float *a, const float *b, float *c, int n)`.
type VecAdd = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, i32);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(cubin)) = (args.get(1), args.get(2)) else {
        return Err("usage: cubin_vec_add PLUGIN_DIR VEC_ADD_CUBIN".into());
    };
    let plugin = Path::new(dir).join("libomptarget.rtl.cuda.so");
    // SAFETY: the plugin the example was told to use, built by this project.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([plugin]) })?;
    if runtime.device_count() == 0 {
        return Err("the CUDA plugin has no device".into());
    }
    let device = runtime.device(0)?;
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let expect: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a * 2.0 + b).collect();
    // SAFETY: the example's kernel object: no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, cubin, &["vec_add"]) }?;
    // SAFETY: vec_add's parameters are `VecAdd`; it touches c[0..n) only.
    let kernel: Kernel<VecAdd> = unsafe { image.kernel("vec_add")? };
    let da = DeviceBuffer::from_slice(device, &a)?;
    let db = DeviceBuffer::from_slice(device, &b)?;
    let mut dc = DeviceBuffer::<f32>::new(device, n)?;
    let config = LaunchConfig::teams((n as u32).div_ceil(256), 256);
    // SAFETY: every length passed is at most its buffer's length.
    unsafe { kernel.launch_unchecked(config, (&da, &db, &mut dc, n as i32)) }?;
    let blocking = dc.to_vec()?;
    // The same on a queue (a CUDA stream), overwriting the result first.
    let mut queued = vec![0f32; n];
    dc.fill(0.0)?;
    omptarget::scope(|s| -> omptarget::Result<()> {
        let q = s.queue(device)?;
        let c = s.bind(&mut dc);
        // SAFETY: every length passed is at most its buffer's length.
        unsafe { q.launch_unchecked(&kernel, config, (&da, &db, c, n as i32)) }?;
        q.copy_to_host(c, &mut queued)?;
        Ok(())
    })?;
    let wrong = blocking
        .iter()
        .zip(&queued)
        .zip(&expect)
        .filter(|((x, y), e)| x != e || y != e)
        .count();
    drop((da, db, dc));
    image.unload()?;
    let report = runtime.shutdown();
    println!(
        "cubin vec_add on {n} values, blocking and queued: {wrong} wrong; shutdown {}",
        report.summary()
    );
    if wrong != 0 || !report.is_clean() {
        println!("{report}");
        std::process::exit(1);
    }
    Ok(())
}
