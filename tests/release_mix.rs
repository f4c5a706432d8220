//! One process, two releases: a clang-14 program that dlopens a clang-22
//! offload library, and a clang-22 program that dlopens a clang-14 one
//! (`tests/c_mix`), both on our runtime.
//!
//! Each side's entry table is read in its own layout (32-byte entries for
//! the clang-14 binary, 56-byte ones for clang 22's), both images run, the
//! process holds one runtime (the library's `libomptarget.so.22.1` and the
//! program's `libomptarget.so` are the same staged file), and each binary's
//! diagnostics are worded as its own release's runtime words them
//! (`Libomptarget error:` for clang 14's call, `omptarget error:` for clang
//! 22's). LLVM cannot be the reference here: its two releases' runtimes
//! would both be loaded, each seeing half of the process.

use omptarget_test_support::exec;
use omptarget_test_support::release::Release;
use omptarget_test_support::suite::build::{DEBUG_FLAGS, OFFLOAD_FLAGS};
use omptarget_test_support::{paths, stage};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Compile `source` (in `tests/c_mix`) with `release`'s clang into `out`.
fn compile(release: Release, source: &str, out: &Path, extra: &[&str]) {
    let cc = format!("clang-{}", release.major());
    let output = Command::new(&cc)
        .args(OFFLOAD_FLAGS)
        .args(release.extra_flags())
        .args(DEBUG_FLAGS)
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(out)
        .current_dir(paths::workspace_root().join("tests/c_mix"))
        .output()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(
        output.status.success(),
        "{cc} {source} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn toolchains_present() -> bool {
    let missing: Vec<PathBuf> = [Release::Llvm14, Release::Llvm22]
        .iter()
        .flat_map(|r| r.reference_files())
        .filter(|f| !f.exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "missing {missing:?}: run `cargo xtask deps`"
    );
    eprintln!("skipping: missing {missing:?} (run `cargo xtask deps`)");
    false
}

/// Build the pair, run it on ours, return (stdout, stderr).
fn run_mix(main: Release, lib: Release) -> (String, String) {
    let dir = paths::omptarget_dir().join("c-mix").join(format!(
        "main{}-lib{}",
        main.major(),
        lib.major()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let library = dir.join("libmix.so");
    let program = dir.join("mix_main");
    compile(lib, "mix_lib.c", &library, &["-fPIC", "-shared"]);
    compile(main, "mix_main.c", &program, &["-ldl"]);
    let ours = &stage::staged().lib_dir;
    // The newer release's libomp serves both (one libomp per process).
    let newer = main.max_by_major(lib);
    let cmd = exec::command(
        &program,
        &[library.to_string_lossy().into_owned()],
        &[],
        newer.our_library_path(ours),
    );
    let out = exec::run(cmd, Duration::from_secs(60)).unwrap();
    assert_eq!(
        out.exit_text(),
        "exit code 0",
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    (out.stdout, out.stderr)
}

fn check(main: Release, lib: Release) {
    if !toolchains_present() {
        return;
    }
    let (stdout, stderr) = run_mix(main, lib);
    // 0..100 sums to 4950, 0..10 to 45; the library's global counts calls.
    let expected = "main region: x=42\n\
                    library kernels: 49501 then 452\n\
                    runtimes loaded: 1\n\
                    bad copies: main rc=-1 library rc=-1\n\
                    main region after the library: x=43\n";
    assert_eq!(stdout, expected, "stderr:\n{stderr}");
    let line = |r: Release| {
        let prefix = if r == Release::Llvm14 {
            "Libomptarget"
        } else {
            "omptarget"
        };
        format!("{prefix} error: Call to omp_target_memcpy with invalid arguments\n")
    };
    assert_eq!(stderr, format!("{}{}", line(main), line(lib)));
}

#[test]
fn clang_14_program_dlopens_a_clang_22_library() {
    check(Release::Llvm14, Release::Llvm22);
}

#[test]
fn clang_22_program_dlopens_a_clang_14_library() {
    check(Release::Llvm22, Release::Llvm14);
}
