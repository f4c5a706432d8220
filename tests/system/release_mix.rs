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
//!
//! The same holds when the binaries are linked against our library's own
//! name (`-L target/omptarget/lib`: each then needs the plain
//! `libomptarget.so`, whichever clang built it), as a user who links
//! against an installed omptarget-rs gets them: the release is read off
//! the binary itself (its compiler identification, or without one its
//! offload sections), not off the name it links.

use omptarget_test_support::exec;
use omptarget_test_support::release::Release;
use omptarget_test_support::suite::build::{DEBUG_FLAGS, OFFLOAD_FLAGS};
use omptarget_test_support::{paths, stage};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How a binary finds libomptarget when it is linked.
#[derive(Clone, Copy, PartialEq)]
enum Link {
    /// Against its release's own folder (`libomptarget.so.22.1` for clang 22).
    AsTheRelease,
    /// Against our staged folder first: it needs `libomptarget.so`.
    OwnName,
    /// As `OwnName`, and the compiler identification (`.comment`) removed
    /// afterwards: the release must come from the offload sections.
    OwnNameNoComment,
    /// As `OwnName`, with an object of clang 22 (no offload code, as from
    /// a vendor's static library) linked in: its `clang version 22` in
    /// `.comment` must not make a clang-14 binary LLVM 22's.
    OwnNameWithClang22Object,
}

/// Compile `source` (in `tests/c_mix`) with `release`'s clang into `out`.
fn compile(release: Release, link: Link, source: &str, out: &Path, extra: &[&str]) {
    let cc = format!("clang-{}", release.major());
    let ours_first = match link {
        Link::AsTheRelease => None,
        Link::OwnName | Link::OwnNameNoComment | Link::OwnNameWithClang22Object => {
            Some(format!("-L{}", stage::staged().lib_dir.display()))
        }
    };
    let newer_object = (link == Link::OwnNameWithClang22Object).then(|| {
        let source = out.with_extension("helper.c");
        let object = out.with_extension("helper.o");
        std::fs::write(&source, "int mix_helper(int x) { return x + 1; }\n").unwrap();
        let status = Command::new("clang-22")
            .args(["-c", "-fPIC"])
            .arg(&source)
            .arg("-o")
            .arg(&object)
            .status()
            .expect("running clang-22");
        assert!(status.success(), "clang-22 -c {} failed", source.display());
        object
    });
    let output = Command::new(&cc)
        .args(OFFLOAD_FLAGS)
        .args(ours_first)
        .args(release.extra_flags())
        .args(DEBUG_FLAGS)
        .args(extra)
        .arg(source)
        .args(newer_object)
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
    let needed = needed_runtime(out);
    let expected = match link {
        Link::AsTheRelease => release.soname(),
        Link::OwnName | Link::OwnNameNoComment | Link::OwnNameWithClang22Object => {
            "libomptarget.so"
        }
    };
    assert_eq!(needed, expected, "{} links the runtime as", out.display());
    if link == Link::OwnNameNoComment {
        let status = Command::new("objcopy")
            .arg("--remove-section=.comment")
            .arg(out)
            .status()
            .expect("running objcopy");
        assert!(status.success(), "objcopy --remove-section=.comment failed");
    }
}

/// The libomptarget name `binary` links (its `DT_NEEDED`).
fn needed_runtime(binary: &Path) -> String {
    use object::read::elf::Dyn;
    let bytes = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let needed = match &file {
        object::File::Elf64(elf) => {
            let endian = elf.endian();
            let dynamic = elf
                .elf_section_table()
                .dynamic(endian, elf.data())
                .unwrap()
                .expect("a dynamic section");
            let (entries, strings_index) = dynamic;
            let strings = elf
                .elf_section_table()
                .strings(endian, elf.data(), strings_index)
                .unwrap();
            entries
                .iter()
                .filter(|d| d.tag32(endian) == Some(object::elf::DT_NEEDED))
                .filter_map(|d| d.string(endian, strings).ok())
                .map(|name| String::from_utf8_lossy(name).into_owned())
                .collect::<Vec<_>>()
        }
        _ => panic!("{} is not a 64-bit ELF", binary.display()),
    };
    needed
        .into_iter()
        .find(|n| n.starts_with("libomptarget.so"))
        .unwrap_or_else(|| panic!("{} needs no libomptarget", binary.display()))
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
fn run_mix(main: (Release, Link), lib: (Release, Link)) -> (String, String) {
    let form = |link: Link| match link {
        Link::AsTheRelease => "",
        Link::OwnName => "-own",
        Link::OwnNameNoComment => "-own-nocomment",
        Link::OwnNameWithClang22Object => "-own-with22",
    };
    let dir = paths::omptarget_dir().join("c-mix").join(format!(
        "main{}{}-lib{}{}",
        main.0.major(),
        form(main.1),
        lib.0.major(),
        form(lib.1)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let library = dir.join("libmix.so");
    let program = dir.join("mix_main");
    compile(lib.0, lib.1, "mix_lib.c", &library, &["-fPIC", "-shared"]);
    compile(main.0, main.1, "mix_main.c", &program, &["-ldl"]);
    let ours = &stage::staged().lib_dir;
    // The newer release's libomp serves both (one libomp per process).
    let newer = main.0.max_by_major(lib.0);
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

fn check(main: (Release, Link), lib: (Release, Link)) {
    if !toolchains_present() {
        return;
    }
    let (stdout, stderr) = run_mix(main, lib);
    let (main, lib) = (main.0, lib.0);
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
    check(
        (Release::Llvm14, Link::AsTheRelease),
        (Release::Llvm22, Link::AsTheRelease),
    );
}

#[test]
fn clang_22_program_dlopens_a_clang_14_library() {
    check(
        (Release::Llvm22, Link::AsTheRelease),
        (Release::Llvm14, Link::AsTheRelease),
    );
}

#[test]
fn both_linked_against_our_name_each_follows_its_own_clang() {
    check(
        (Release::Llvm22, Link::OwnName),
        (Release::Llvm14, Link::OwnName),
    );
    check(
        (Release::Llvm14, Link::OwnName),
        (Release::Llvm22, Link::OwnName),
    );
}

#[test]
fn an_object_of_a_newer_clang_linked_in_does_not_change_the_release() {
    check(
        (Release::Llvm14, Link::OwnNameWithClang22Object),
        (Release::Llvm22, Link::OwnName),
    );
}

#[test]
fn without_a_compiler_identification_the_offload_sections_tell() {
    check(
        (Release::Llvm22, Link::OwnNameNoComment),
        (Release::Llvm14, Link::OwnNameNoComment),
    );
}
