//! What the examples share: building a kernel from `tests/kernels` with the
//! system C compiler (`cc`, or `$CC`), as a program would build its own
//! device code for the host plugin.
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/kernels/<source>` compiled to a shared object in `dir`; or the
/// object given as the program's first argument.
pub fn kernel(source: &str, dir: &Path) -> Result<PathBuf> {
    if let Some(path) = std::env::args_os().nth(1) {
        return Ok(PathBuf::from(path));
    }
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels");
    let out = dir.join(source.replace(".c", ".so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(&kernels)
        .arg(kernels.join(source))
        .arg("-o")
        .arg(&out)
        .status()
        .with_context(|| format!("running {cc}"))?;
    if !status.success() {
        bail!("{cc} failed on {source}");
    }
    Ok(out)
}
