//! Where the runtime's libraries are, found from this binary's own
//! location: installed (`PREFIX/bin/omptarget` next to `PREFIX/lib`), or in
//! the repository (`target/debug/omptarget` next to `target/omptarget/lib`,
//! what `cargo xtask stage` fills).
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The runtime library's name in the folder.
pub const RUNTIME: &str = "libomptarget.so";

/// The library folder for the binary at `exe`: the first candidate that
/// holds `libomptarget.so`.
pub fn for_executable(exe: &Path) -> Result<PathBuf> {
    let bin = exe.parent().context("the executable has no folder")?;
    let candidates = [
        bin.join("../lib"),
        bin.join("../omptarget/lib"),
        bin.join("../../omptarget/lib"),
    ];
    for dir in &candidates {
        if dir.join(RUNTIME).is_file() {
            return Ok(dir.canonicalize()?);
        }
    }
    bail!(
        "cannot find {RUNTIME} for {}: looked in {} (install with `cargo xtask install --prefix DIR`, or run `cargo xtask stage` in the repository)",
        exe.display(),
        candidates
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The library folder of this program.
pub fn find() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this program's own path")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    for_executable(&exe)
}

/// The plugin libraries in `dir` (`libomptarget.rtl.*.so`), by name, the
/// MPI plugin last.
pub fn plugins_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut plugins: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libomptarget.rtl.") && n.ends_with(".so"))
        })
        .collect();
    plugins.sort();
    // The MPI plugin's devices are numbered after the local ones, as in a
    // program (its devices are other ranks').
    plugins.sort_by_key(|p| p.file_name() == Some(omptarget::plugin::MPI_PLUGIN_NAME.as_ref()));
    Ok(plugins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_and_repository_layouts_are_found() {
        let root = tempfile::tempdir().unwrap();
        let installed = root.path().join("prefix");
        std::fs::create_dir_all(installed.join("bin")).unwrap();
        std::fs::create_dir_all(installed.join("lib")).unwrap();
        std::fs::write(installed.join("lib").join(RUNTIME), b"").unwrap();
        assert_eq!(
            for_executable(&installed.join("bin/omptarget")).unwrap(),
            installed.join("lib").canonicalize().unwrap()
        );
        let repo = root.path().join("target");
        std::fs::create_dir_all(repo.join("debug/deps")).unwrap();
        std::fs::create_dir_all(repo.join("omptarget/lib")).unwrap();
        std::fs::write(repo.join("omptarget/lib").join(RUNTIME), b"").unwrap();
        let lib = repo.join("omptarget/lib").canonicalize().unwrap();
        assert_eq!(for_executable(&repo.join("debug/omptarget")).unwrap(), lib);
        assert_eq!(
            for_executable(&repo.join("debug/deps/omptarget-1")).unwrap(),
            lib
        );
        let err = for_executable(&root.path().join("nowhere/omptarget")).unwrap_err();
        assert!(
            err.to_string().contains("cannot find libomptarget.so"),
            "{err}"
        );
    }
}
