//! The kit is what every plugin shares: it names no backend and needs no
//! backend's dependencies (as LLVM's plugins-nextgen `common/`). A backend
//! crate (`ffi/plugins/host`, later `ffi/plugins/cuda`) brings its own.

use std::path::Path;

/// Crates only a backend needs: the host backend's launcher and ELF reader.
const BACKEND_ONLY: &[&str] = &["libffi", "object", "cudarc"];

#[test]
fn the_kit_depends_on_no_backend_crate() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("reading the kit's Cargo.toml");
    let mut section = "";
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or("");
        if BACKEND_ONLY.contains(&name) || name.starts_with("omptarget-plugin-") {
            // Allowed only for the test helpers (feature `testing`).
            assert!(
                line.contains("optional = true") && name != "libffi" && name != "cudarc",
                "the kit must not depend on backend crate `{name}`: {line}"
            );
        }
    }
}

#[test]
fn the_kit_sources_name_no_backend() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(&src).expect("the kit's src/") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for backend in ["omptarget_plugin_host", "HostBackend", "libffi::"] {
                assert!(
                    !text.contains(backend),
                    "{} names the backend item `{backend}`",
                    path.display()
                );
            }
        }
    }
}
