//! The kit is what every plugin shares: it names no backend and needs no
//! backend's dependencies (as LLVM's plugins-nextgen `common/`). Each
//! backend is a crate of its own under `ffi/plugin/` that brings its own:
//! the host backend (`ffi/plugin/host`), the CUDA one (`ffi/plugin/cuda`),
//! the test-only plugins (`ffi/plugin/test`, `ffi/plugin/incomplete`),
//! and their cdylibs (`rtl/`). The backends are found by walking
//! `ffi/plugin/`, so one added later (the MPI one was) is covered without
//! editing this file, except for classifying its new dependencies (checked
//! below).

use std::path::{Path, PathBuf};

/// Crates only a backend needs, never a dependency of the kit (not even
/// an optional one): the host backend's launcher (libffi) and the CUDA
/// backend's driver bindings (cudarc).
const BACKEND_ONLY: &[&str] = &["libffi", "cudarc"];

/// Crates backends need that the kit may take only for its test helpers
/// (feature `testing`, so optional): opening a built plugin (libloading),
/// reading a library or device image (object), temporary copies (tempfile).
const TESTING_ONLY: &[&str] = &["libloading", "object", "tempfile"];

/// Crates backends and the kit may both use, neither backend-specific
/// (tracing: the MPI backend's debug output, as the runtime's; twox-hash:
/// the MPI backend's key of an image's bytes).
const SHARED: &[&str] = &["libc", "thiserror", "tracing", "twox-hash"];

fn kit_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every backend crate's manifest: `ffi/plugin/*/Cargo.toml` and
/// `ffi/plugin/*/rtl/Cargo.toml`, the kit itself and the ABI crate beside it
/// left out.
fn backend_manifests() -> Vec<PathBuf> {
    let plugins = kit_dir().join("..");
    let mut manifests = Vec::new();
    for entry in std::fs::read_dir(&plugins).expect("ffi/plugin/") {
        let dir = entry.unwrap().path();
        if ["kit", "abi"].iter().any(|name| dir.ends_with(name)) {
            continue;
        }
        for manifest in [dir.join("Cargo.toml"), dir.join("rtl/Cargo.toml")] {
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    manifests.sort();
    manifests
}

/// The `[package]` name of a manifest.
fn package_name(manifest: &str) -> String {
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[package]" {
            if let Some(value) = line.strip_prefix("name") {
                return value
                    .trim_start_matches([' ', '='])
                    .trim_matches('"')
                    .to_string();
            }
        }
    }
    panic!("a manifest without a package name")
}

/// The names of the dependencies a manifest lists in `[dependencies]` and
/// its target-specific forms, with each line.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut section = "";
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let normal = section == "[dependencies]"
            || (section.starts_with("[target.") && section.ends_with(".dependencies]"));
        if !normal || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or("");
        found.push((name.to_string(), line.to_string()));
    }
    found
}

/// `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// What names a backend in Rust code: its crates (`omptarget_plugin_host`
/// ...), its `Backend` types (`HostBackend` ...), and paths into the
/// backend-only crates (`libffi::` ...).
fn backend_names() -> Vec<String> {
    let mut names: Vec<String> = BACKEND_ONLY.iter().map(|c| format!("{c}::")).collect();
    for manifest in backend_manifests() {
        let text = std::fs::read_to_string(&manifest).unwrap();
        names.push(package_name(&text).replace('-', "_"));
        let src = manifest.parent().unwrap().join("src");
        if !src.is_dir() {
            continue;
        }
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            for line in text.lines().filter(|l| l.trim_start().starts_with("impl")) {
                if let Some((_, rest)) = line.split_once("Backend for ") {
                    let ty: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    names.push(ty);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_backend_is_found() {
    let names = backend_names();
    for expected in [
        "omptarget_plugin_host",
        "HostBackend",
        "omptarget_plugin_cuda",
        "CudaBackend",
        "omptarget_plugin_test",
        "TestBackend",
        "omptarget_plugin_incomplete",
        "libffi::",
        "cudarc::",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "`{expected}` is not among the backend names found: {names:?}"
        );
    }
}

#[test]
fn every_backend_dependency_is_classified() {
    for manifest in backend_manifests() {
        let text = std::fs::read_to_string(&manifest).unwrap();
        for (name, line) in dependencies(&text) {
            assert!(
                name.starts_with("omptarget-")
                    || BACKEND_ONLY.contains(&name.as_str())
                    || TESTING_ONLY.contains(&name.as_str())
                    || SHARED.contains(&name.as_str()),
                "{}: dependency `{name}` is unclassified; list it in BACKEND_ONLY, \
                 TESTING_ONLY or SHARED of this test: {line}",
                manifest.display()
            );
        }
    }
}

#[test]
fn the_kit_depends_on_no_backend_crate() {
    let manifest = std::fs::read_to_string(kit_dir().join("Cargo.toml"))
        .expect("reading the kit's Cargo.toml");
    let backend_crates: Vec<String> = backend_manifests()
        .iter()
        .map(|m| package_name(&std::fs::read_to_string(m).unwrap()))
        .collect();
    for (name, line) in dependencies(&manifest) {
        assert!(
            !backend_crates.contains(&name) && !BACKEND_ONLY.contains(&name.as_str()),
            "the kit must not depend on backend crate `{name}`: {line}"
        );
        if TESTING_ONLY.contains(&name.as_str()) {
            // Allowed only for the test helpers (feature `testing`).
            assert!(
                line.contains("optional = true"),
                "the kit may depend on `{name}` only for feature `testing`: {line}"
            );
        }
    }
}

#[test]
fn the_kit_sources_name_no_backend() {
    let names = backend_names();
    for path in rust_files(&kit_dir().join("src")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for backend in &names {
            assert!(
                !text.contains(backend.as_str()),
                "{} names the backend item `{backend}`",
                path.display()
            );
        }
    }
}
