//! Build automation: `cargo run -p xtask -- <command>`.
//!
//! `stage` builds the plugins and the shim and copies them, under the names
//! LLVM's runtime uses, into the fixed output folder `target/omptarget/lib`
//! (test-only plugins go to `target/omptarget/test-plugins`).

mod stage;

use anyhow::{bail, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("stage") => {
            let release = args.iter().any(|a| a == "--release");
            let staged = stage::stage(release)?;
            println!("{}", staged.lib_dir.display());
            Ok(())
        }
        _ => bail!("usage: cargo run -p xtask -- stage [--release]"),
    }
}
