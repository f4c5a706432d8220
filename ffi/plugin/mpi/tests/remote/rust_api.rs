//! The Rust API on remote devices: `Runtime::new(Config::default()
//! .with_plugins([libomptarget.rtl.mpi.so]))` in the program rank of an
//! MPI job.
//!
//! The program rank is this test binary itself: the test below starts
//! `mpirun` with this binary, told to run only [`program_rank`] (an
//! ignored test, so that a plain run of the suite does not run it outside
//! a job), beside two device servers of two host devices each.
use crate::job;
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime, Slice, SliceMut};
use omptarget_test_support::exec::Exit;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the program rank's environment: the kernel library to load.
pub(crate) const KERNEL_VAR: &str = "OMPTARGET_TEST_REMOTE_KERNEL";

/// `void vec_add_slices(const float *a, size_t na, const float *b,
/// size_t nb, float *c, size_t nc)` of `tests/kernels/vec_add.c`.
pub(crate) type VecAdd = (Slice<f32>, Slice<f32>, SliceMut<f32>);

/// `tests/kernels/vec_add.c` built as a user builds a kernel library.
pub(crate) fn vec_add_library(dir: &Path) -> PathBuf {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/kernels");
    let out = dir.join("vec_add.so");
    let built = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(&kernels)
        .arg(kernels.join("vec_add.c"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("cc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

/// The program rank's work; its stdout is what the test checks. Each
/// `fact: ` line is one fact, so that a failure says which (libtest's own
/// lines come between them).
fn run_program_rank() -> anyhow::Result<()> {
    let kernel_library = std::env::var(KERNEL_VAR)?;
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([job::mpi_plugin()]) })?;
    let remote: Vec<_> = runtime
        .devices()
        .filter(|d| d.plugin_name() == "libomptarget.rtl.mpi.so")
        .collect();
    println!("fact: remote devices: {}", remote.len());
    let local = runtime.device_count() - remote.len();
    let first_remote = remote.first().map(|d| d.id());
    println!(
        "fact: remote devices come after the local ones: {}",
        first_remote == Some(local)
    );
    let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..1000).map(|i| (2 * i) as f32).collect();
    let mut results = Vec::new();
    for device in &remote {
        // Where the device is: "rank R on HOST".
        let location = device.properties()?.location.unwrap_or_default();
        let rank = location.split(' ').nth(1).unwrap_or("?").to_owned();
        // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
        let image = unsafe { Image::load_file(device, &kernel_library, &["vec_add_slices"]) }?;
        // SAFETY: `VecAdd` is its signature; it stays below the lengths it
        // is given.
        let add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let mut dc = DeviceBuffer::<f32>::new(device, a.len())?;
        add.launch(LaunchConfig::default(), (&da, &db, &mut dc))?;
        let c = dc.to_vec()?;
        let right = c.iter().enumerate().all(|(i, v)| *v == (3 * i) as f32);
        results.push(format!("rank {rank}: vec_add right: {right}"));
        drop((da, db, dc));
        image.unload()?;
    }
    results.sort();
    for line in results {
        println!("fact: {line}");
    }
    // A device-to-device copy between two ranks' devices (the last
    // remote device is on the other server than the first).
    if let (Some(first), Some(last)) = (remote.first(), remote.last()) {
        let src = DeviceBuffer::from_slice(first, &a)?;
        let mut dst = DeviceBuffer::<f32>::new(last, a.len())?;
        dst.copy_from(&src)?;
        println!("fact: copy between ranks right: {}", dst.to_vec()? == a);
    }
    let report = runtime.shutdown();
    println!("fact: shutdown clean: {}", report.is_clean());
    let text = report.to_string();
    for step in ["deinit device", "deinit plugin", "close plugin"] {
        println!("fact: report has {step}: {}", text.contains(step));
    }
    if !report.is_clean() {
        eprintln!("{report}");
    }
    Ok(())
}

#[test]
#[ignore = "the program rank of `the_rust_api_computes_on_remote_devices`'s MPI job"]
fn program_rank() {
    if let Err(err) = run_program_rank() {
        panic!("{err:#}");
    }
}

#[test]
fn the_rust_api_computes_on_remote_devices() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = vec_add_library(dir.path());
    let me = std::env::current_exe().unwrap();
    let mut cmd = job::mpirun();
    cmd.args(["-x", &format!("{KERNEL_VAR}={}", kernel.display())]);
    cmd.args(["-np", "1"]).arg(me).args([
        "--ignored",
        "--exact",
        "rust_api::program_rank",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.args([":", "-x", "OMPTARGET_HOST_DEVICES=2", "-np", "2"])
        .arg(job::server());
    let out = job::run(cmd);
    let describe = format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.exit_text(),
        out.stdout,
        out.stderr
    );
    assert_eq!(out.exit, Some(Exit::Code(0)), "{describe}");
    let facts = job::facts(&out.stdout);
    assert_eq!(
        facts,
        [
            "remote devices: 4",
            "remote devices come after the local ones: true",
            "rank 1: vec_add right: true",
            "rank 1: vec_add right: true",
            "rank 2: vec_add right: true",
            "rank 2: vec_add right: true",
            "copy between ranks right: true",
            "shutdown clean: true",
            "report has deinit device: true",
            "report has deinit plugin: true",
            "report has close plugin: true",
        ],
        "{describe}"
    );
}
