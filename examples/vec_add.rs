//! Offload a vector addition through omptarget's Rust API and print the
//! result and the runtime's shutdown report.
//!
//! ```text
//! cargo run -p xtask -- stage                      # builds the plugins
//! cargo run --example vec_add [-- path/to/vec_add.so]
//! ```
//!
//! Without an argument the kernel (tests/kernels/vec_add.c) is compiled with
//! `clang-14 -shared -fPIC -O2`. Plugins come from `OMPTARGET_PLUGINS`
//! (colon-separated), else the staged host plugin
//! `target/omptarget/lib/libomptarget.rtl.x86_64.so`. `LIBOMPTARGET_DEBUG=1`
//! shows what the runtime does.
use anyhow::{bail, Context, Result};
use omptarget::{Config, DeviceBuffer, Image, KernelArg, LaunchConfig, Runtime};
use std::path::{Path, PathBuf};
use std::process::Command;

const N: usize = 1 << 20;

fn main() -> Result<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir()?;
    let kernel = match std::env::args_os().nth(1) {
        Some(path) => PathBuf::from(path),
        None => compile_kernel(&workspace.join("tests/kernels/vec_add.c"), scratch.path())?,
    };

    let mut config = Config::from_env();
    if config.plugins.is_none() {
        let host = workspace.join("target/omptarget/lib/libomptarget.rtl.x86_64.so");
        if !host.is_file() {
            bail!(
                "{} not found: run `cargo run -p xtask -- stage` first, or set OMPTARGET_PLUGINS",
                host.display()
            );
        }
        config.plugins = Some(vec![host]);
    }
    let runtime = Runtime::new(config)?;
    for skipped in runtime.skipped_plugins() {
        eprintln!("skipped plugin {skipped}");
    }
    let device = runtime.device(0).context("no offload device")?;
    println!(
        "device 0 of {}: {}",
        runtime.device_count(),
        device.plugin_name()
    );

    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 2.0 * (N - i) as f32).collect();
    let c = {
        let image = Image::load_file(device, &kernel, &["vec_add"])?;
        let vec_add = image.kernel("vec_add")?;
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let dc = DeviceBuffer::<f32>::new(device, N)?;
        // SAFETY: vec_add(const float *a, const float *b, float *c, intptr_t n)
        // reads a[0..n], b[0..n] and writes c[0..n]; all three hold N floats.
        unsafe {
            vec_add.launch(
                &[
                    (&da).into(),
                    (&db).into(),
                    (&dc).into(),
                    KernelArg::scalar(N),
                ],
                LaunchConfig {
                    teams: 1,
                    threads: 1,
                },
            )?;
        }
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

fn compile_kernel(source: &Path, dir: &Path) -> Result<PathBuf> {
    let out = dir.join("vec_add.so");
    let status = Command::new("clang-14")
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(source.parent().unwrap())
        .arg(source)
        .arg("-o")
        .arg(&out)
        .status()
        .context("running clang-14")?;
    if !status.success() {
        bail!("clang-14 failed on {}", source.display());
    }
    Ok(out)
}
