//! Build automation: `cargo xtask <command>` (alias in .cargo/config.toml).
//!
//! * `stage [--release]`: build the plugins and the shim and copy them,
//!   under LLVM's names, into `target/omptarget/lib` (test-only plugins into
//!   `target/omptarget/test-plugins`).
//! * `install --prefix DIR [--debug]`: the `omptarget` command in
//!   `DIR/bin`, the runtime and its plugins (every staged name) in `DIR/lib`.
//! * `install-check`: the `test` step that installs (debug) into
//!   `target/install-check` and runs a clang-14 program through it.
//! * `deps`: install the Debian packages the build and tests need.
//! * `test`: every CI check (see `test::STEPS`).
//! * `demo`: the main job: a clang-14 and a clang-22 offload program on the staged
//!   runtime, with its shutdown report; then the Rust API example.
//! * `valgrind <test> [args]`: one integration test under valgrind.
//! * `lint`: rustfmt check, clippy and `cargo doc` with warnings denied.
//! * `check-dtors [lib.so...]`: the no-global-destructors check (default:
//!   every staged library).
//! * `lit-cc COMPILER ARGS...`: the lit step's compiler, which builds each
//!   program once per run of `scripts/llvm-lit.py` (`lit_cc`); run as
//!   `target/debug/xtask lit-cc`, not through cargo.
//!
//! Modules: one per command (`stage`, `install` with `install-check`,
//! `deps`, `test`, `valgrind`, `dtors` for `check-dtors`, `lit_cc` for
//! `lit-cc`) and `cmd`
//! (running child processes); `demo` and `lint` are functions of this file.
//! `docs_check` (tests only): README.md's dependency table, layout of
//! `target/omptarget` and program counts against `.ci/apt-packages.txt`,
//! `stage`'s constants and `tests/c`; `layers` (tests only): DESIGN.md's
//! layer rule and crate table against the manifests; `lit_cc_cache_check`
//! (tests only): the lit step's build cache compiles once per source and
//! builds what clang builds.

mod cmd;
mod deps;
#[cfg(test)]
mod docs_check;
mod dtors;
mod install;
#[cfg(test)]
mod layers;
mod lit_cc;
#[cfg(test)]
mod lit_cc_cache_check;
mod stage;
mod test;
mod valgrind;

use anyhow::{bail, Result};
use std::path::PathBuf;

const USAGE: &str = "usage: cargo xtask <command>
  stage [--release]       build plugins + shim into target/omptarget/lib
  stage --release-copy    the release copy `test` checks (the shim, host and
                          CUDA plugins alone) into target/omptarget/lib-release
  install --prefix DIR [--debug]
                          omptarget in DIR/bin, the runtime and plugins in DIR/lib
  install-check           install (debug) into target/install-check, run a clang-14 program through it
  deps                    apt-get install what the build and tests need
  test                    stage, cargo test --workspace, extra checks
  demo                    clang-14 and clang-22 offload programs on the staged runtime, then the Rust example
  valgrind <test> [args]  run integration test <test> under valgrind
  lint                    cargo fmt --check; cargo clippy -D warnings
  check-dtors [lib.so..]  no global destructors (default: staged libs)
  lit-cc COMPILER ARGS..  the lit step's caching compiler (scripts/llvm-lit.py runs it)";

fn main() -> Result<()> {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // The compiler wrapper passes on whatever lit gives it, text or not.
    if raw.first().is_some_and(|a| a == "lit-cc") {
        return lit_cc::main(&raw[1..]);
    }
    let args = raw
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("an argument is not UTF-8: {a:?}"))
        })
        .collect::<Result<Vec<String>>>()?;
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("stage") if rest.iter().any(|a| a == "--release-copy") => {
            println!("{}", test::build_release_copy()?.display());
            Ok(())
        }
        Some("stage") => {
            let release = rest.iter().any(|a| a == "--release");
            let staged = stage::stage(release)?;
            println!("{}", staged.lib_dir.display());
            Ok(())
        }
        Some("install") => {
            let debug = rest.iter().any(|a| a == "--debug");
            let prefix = match rest.iter().position(|a| a == "--prefix") {
                Some(i) => rest.get(i + 1),
                None => None,
            };
            let Some(prefix) = prefix else {
                bail!("usage: cargo xtask install --prefix DIR [--debug]");
            };
            install::install(std::path::Path::new(prefix), debug)
        }
        Some("install-check") => install::check(),
        Some("deps") => deps::deps(),
        Some("test") => test::test(),
        Some("demo") => demo(),
        Some("valgrind") => match rest.split_first() {
            Some((name, extra)) => valgrind::valgrind(name, extra),
            None => bail!("usage: cargo xtask valgrind <integration-test-name> [test args]"),
        },
        Some("lint") => lint(),
        Some("check-dtors") => {
            let libs: Vec<PathBuf> = if rest.is_empty() {
                let staged = stage::stage(false)?;
                let mut libs = dtors::shared_libraries(&staged.lib_dir)?;
                libs.extend(dtors::shared_libraries(&staged.test_plugin_dir)?);
                libs
            } else {
                rest.iter().map(PathBuf::from).collect()
            };
            dtors::check(&libs)
        }
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

/// The main job: a clang-14 OpenMP offload program (examples/c) run end to
/// end on the staged `libomptarget.so` and host plugin, printing its result
/// and the runtime's shutdown report; then the same work through the Rust
/// API (`examples/vec_add.rs`).
fn demo() -> Result<()> {
    let staged = stage::stage(false)?;
    println!("staged into {}", staged.lib_dir.display());
    let root = stage::workspace_root();
    let out = staged
        .lib_dir
        .parent()
        .expect("lib dir has a parent")
        .join("demo");
    std::fs::create_dir_all(&out)?;
    // The same program built by clang 14 and by clang 22 (which links
    // libomptarget.so.22.1, 56-byte entries, __tgt_target_kernel), each run
    // on the one staged runtime.
    let llvm22 = deps::llvm_release_lib_dir(22);
    if !llvm22.join("libomp.so.5").exists() {
        anyhow::bail!(
            "{} is missing: run `cargo xtask deps` first (it unpacks LLVM 22's libomp)",
            llvm22.display()
        );
    }
    for major in [14u32, 22] {
        let exe = out.join(format!("saxpy_offload_clang{major}"));
        let mut compile = std::process::Command::new(format!("clang-{major}"));
        compile.args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O2"]);
        if major != 14 {
            compile
                .arg(format!("-I{}", llvm22.join("clang/22/include").display()))
                .arg(format!("-L{}", llvm22.display()));
        }
        cmd::run(
            compile
                .arg(root.join("examples/c/saxpy_offload.c"))
                .arg("-o")
                .arg(&exe),
        )?;
        // clang 22's binary finds LLVM 22's libomp after our libraries.
        let path = if major == 14 {
            staged.lib_dir.display().to_string()
        } else {
            format!("{}:{}", staged.lib_dir.display(), llvm22.display())
        };
        println!("== clang-{major} binary (LD_LIBRARY_PATH={path} OMPTARGET_SHUTDOWN_REPORT=1)");
        cmd::run(
            std::process::Command::new(&exe)
                .env("LD_LIBRARY_PATH", &path)
                .env("OMPTARGET_SHUTDOWN_REPORT", "1"),
        )?;
    }
    cmd::run(cmd::cargo().args(["run", "--example", "vec_add"]))
}

pub(crate) fn lint() -> Result<()> {
    cmd::run(cmd::cargo().args(["fmt", "--all", "--", "--check"]))?;
    cmd::run(cmd::cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The docs too: a broken intra-doc link or a malformed doc comment fails.
    cmd::run(
        cmd::cargo()
            .args(["doc", "--workspace", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )
}
