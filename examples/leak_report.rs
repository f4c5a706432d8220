//! A program that leaks device memory on purpose, and the report that says
//! so: the shutdown frees what the program never freed, through the
//! plugin, and lists each block; the leak report names the line of each
//! leaking allocation (`#[track_caller]`, no stack walk).
//!
//! ```text
//! cargo run --example leak_report
//! ```
//!
//! Exits with status 1 when the report lists leaks (as it should here), the
//! way a CI job would use it.
use anyhow::Result;
use omptarget::{Config, DeviceBuffer, Runtime};

fn main() -> Result<()> {
    let runtime = Runtime::new(Config::default())?;
    let device = runtime.device(0)?;

    // Freed properly (dropped): into the memory manager's cache.
    let tidy = DeviceBuffer::from_slice(device, &[1u32; 100])?;
    drop(tidy);
    // Leaked: `forget` skips the buffer's drop, so only the shutdown frees it.
    std::mem::forget(DeviceBuffer::<f64>::new(device, 1000)?);
    std::mem::forget(DeviceBuffer::<u8>::new(runtime.device(1)?, 64)?);

    let report = runtime.shutdown();
    print!("{report}");
    println!("summary: {}", report.summary());
    for leak in &report.user_leaks {
        println!(
            "leaked: {} bytes at {:#x} on device {}",
            leak.size, leak.address, leak.device
        );
    }
    let leaks = report.leaks();
    print!("{leaks}");
    // Each leak names the line above that allocated it.
    for leak in &leaks.allocations {
        let at = leak
            .origin
            .resolve()
            .expect("the Rust API records its caller");
        assert_eq!(at.file.as_deref(), Some(file!()), "{at}");
    }
    assert_eq!(leaks.bytes_freed, 8000 + 64);
    std::process::exit(if leaks.is_empty() { 0 } else { 1 });
}
