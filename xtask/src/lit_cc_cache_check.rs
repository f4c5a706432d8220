//! `xtask lit-cc` (`lit_cc`), the compiler of the lit step's runs: a
//! program built twice with different link flags (the lit step's "ours"
//! and "own-name" runs) is compiled once and linked twice, and each
//! binary is byte for byte the one clang makes in one go.

use crate::lit_cc::{Built, Cache};
use std::path::Path;
use std::process::{Command, Output};

/// A target region, so that the build has a device part to link too.
const PROGRAM: &str = r#"
#include <stdio.h>
int main(void) {
  int x = 1;
#pragma omp target map(tofrom : x)
  x += 1;
  printf("%d\n", x);
  return x != 2;
}
"#;

/// What LLVM 14's lit.cfg passes, but the link folder and rpath.
fn flags(link_dir: &str) -> Vec<String> {
    [
        "-fopenmp",
        "-pthread",
        "-L",
        link_dir,
        "-L",
        "/usr/lib/llvm-14/lib",
        "-fno-openmp-implicit-rpath",
        &format!("-Wl,-rpath,{link_dir}"),
        "-fopenmp-targets=x86_64-pc-linux-gnu",
    ]
    .map(String::from)
    .to_vec()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("start the build");
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    out
}

/// `xtask lit-cc clang-14 FLAGS source -o out`, caching in `cache`.
fn cached_build(cache: &Path, flags: &[String], source: &Path, out: &Path) -> Built {
    let mut args = flags.to_vec();
    args.extend([source, Path::new("-o"), out].map(|p| p.to_string_lossy().into_owned()));
    let cache = Cache {
        dir: cache.to_path_buf(),
        root: String::new(),
    };
    let built = crate::lit_cc::build("clang-14", &args, &cache).expect("the build runs");
    assert_eq!(built.code, 0, "{}", String::from_utf8_lossy(&built.stderr));
    built
}

fn entries(cache: &Path, prefix: &str) -> usize {
    std::fs::read_dir(cache)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with(prefix)
        })
        .count()
}

#[test]
fn two_link_forms_compile_once_and_match_the_one_go_build() {
    if !Path::new("/usr/lib/llvm-14/lib/libomptarget.so").exists() {
        // `cargo xtask deps` installs libomp-14-dev; CI always has it.
        eprintln!("skipped: no clang-14 offload runtime (apt-get install libomp-14-dev)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("p.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let cache = dir.path().join("cache");
    // Two link folders as the two runs have them (the second holds no
    // libomptarget, so the link finds the release's next on the path).
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for (link_dir, name) in [(&a, "first"), (&b, "second")] {
        std::fs::create_dir(link_dir).unwrap();
        let flags = flags(&link_dir.to_string_lossy());
        let cached = dir.path().join(name);
        let out = cached_build(&cache, &flags, &source, &cached);
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let direct = dir.path().join(format!("{name}-direct"));
        run(Command::new("clang-14")
            .args(&flags)
            .arg(&source)
            .arg("-o")
            .arg(&direct));
        assert!(
            std::fs::read(&cached).unwrap() == std::fs::read(&direct).unwrap(),
            "the two-step build of the {name} link form differs from clang's one-go build"
        );
        let ran = run(Command::new(&cached).env("LD_LIBRARY_PATH", "/usr/lib/llvm-14/lib"));
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "2\n");
    }
    // One object for both link forms, and each form's binary kept.
    assert_eq!(
        entries(&cache, "obj-"),
        1,
        "the source was compiled more than once"
    );
    assert_eq!(entries(&cache, "."), 0, "a half-written entry was left");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 3);
    // The same build again (the next run's) is the first one's binary,
    // from the cache: with the compiled object gone, a build anew would
    // compile it again into a new entry; none comes. And it still runs.
    let first = dir.path().join("first");
    let kept = std::fs::read(&first).unwrap();
    std::fs::remove_file(&first).unwrap();
    let objects: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("obj-"))
        .collect();
    for object in &objects {
        std::fs::remove_dir_all(object).unwrap();
    }
    cached_build(&cache, &flags(&a.to_string_lossy()), &source, &first);
    assert!(std::fs::read(&first).unwrap() == kept);
    assert_eq!(
        entries(&cache, "obj-"),
        0,
        "the cached build was built again"
    );
    let ran = run(Command::new(&first).env("LD_LIBRARY_PATH", "/usr/lib/llvm-14/lib"));
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "2\n");
}
