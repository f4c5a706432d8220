//! Offload a vector addition through omptarget's Rust API, then print the
//! runtime's shutdown report.
//!
//! ```text
//! cargo run --example vec_add [-- path/to/vec_add.so]
//! ```
//!
//! No plugin file to stage and no variable to set: `Config::default()`
//! gives the built-in host plugin's devices. Without an argument the kernel
//! (`tests/kernels/vec_add.c`) is compiled with `cc -shared -fPIC -O2`.
//! `LIBOMPTARGET_DEBUG=1` with `Config::from_env()` shows what the runtime
//! does.
use anyhow::{bail, Result};
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime, Slice, SliceMut};
use omptarget_test_support::clang::example_kernel;

const N: usize = 1 << 20;

/// `void vec_add_slices(const float *a, size_t na, const float *b, size_t nb,
/// float *c, size_t nc)`.
type VecAdd = (Slice<f32>, Slice<f32>, SliceMut<f32>);

fn main() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let kernel = example_kernel("vec_add.c", scratch.path()).map_err(anyhow::Error::msg)?;

    let runtime = Runtime::new(Config::from_env())?;
    let device = runtime.device(0)?;
    println!(
        "device 0 of {}: {}",
        runtime.device_count(),
        device.plugin_name()
    );

    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 2.0 * (N - i) as f32).collect();
    let c = {
        // SAFETY: the example's kernel object: no initialiser or finaliser.
        let image = unsafe { Image::load_file(device, &kernel, &["vec_add_slices"]) }?;
        // SAFETY: vec_add_slices's C parameters are `VecAdd`, and it
        // touches only the values below the three lengths it is given.
        let vec_add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let mut dc = DeviceBuffer::<f32>::new(device, N)?;
        vec_add.launch(LaunchConfig::default(), (&da, &db, &mut dc))?;
        dc.to_vec()?
    };

    let wrong = (0..N).filter(|&i| c[i] != a[i] + b[i]).count();
    println!("c[0..4] = {:?}, c[N-1] = {}", &c[..4], c[N - 1]);
    println!("{N} elements, {wrong} wrong");
    let report = runtime.shutdown();
    print!("{report}");
    if wrong > 0 || !report.is_clean() {
        bail!("vec_add failed");
    }
    Ok(())
}
