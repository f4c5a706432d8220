//! Helpers for the user-view tests of the Rust API (`tests/`): building the
//! kernels in `tests/kernels` with the system C compiler, as a user would
//! build theirs.
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folder of the kernel sources.
pub fn kernel_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

/// `tests/kernels/<source>` compiled to a shared object (once per test
/// binary and source), under the target folder.
pub fn kernel(source: &str) -> Result<PathBuf> {
    build(source, &[])
}

/// [`kernel`] built with `-fopenmp`: the system compiler's OpenMP (GCC's
/// libgomp, or clang's libomp) runs its pragmas.
pub fn openmp_kernel(source: &str) -> Result<PathBuf> {
    build(source, &["-fopenmp"])
}

fn build(source: &str, flags: &[&str]) -> Result<PathBuf> {
    static BUILT: OnceLock<std::sync::Mutex<Vec<(String, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    let key = format!("{source} {}", flags.join(" "));
    if let Some((_, path)) = built.iter().find(|(s, _)| *s == key) {
        return Ok(path.clone());
    }
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/rust_user_kernels")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&out_dir)?;
    let suffix: String = flags.iter().map(|f| f.replace('-', "_")).collect();
    let out = out_dir.join(source.replace(".c", &format!("{suffix}.so")));
    let src = kernel_dir().join(source);
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2"])
        .args(flags)
        .arg("-I")
        .arg(kernel_dir())
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .with_context(|| format!("running cc on {}", src.display()))?;
    if !status.success() {
        bail!("cc failed on {}", src.display());
    }
    built.push((key, out.clone()));
    Ok(out)
}
