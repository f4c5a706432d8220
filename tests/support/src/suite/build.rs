//! Building the programs with one release's clang (14, 19 or 22), skipping
//! programs whose inputs have not changed since the last build.

use crate::lock::FileLock;
use crate::paths;
use crate::release::Release;
use crate::suite::spec::{Lang, Program};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Flags that make clang-14 emit an x86_64 host-offload program.
pub const OFFLOAD_FLAGS: &[&str] = &["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"];
/// Debug info valgrind 3.19 can read (clang-14 defaults to DWARF 5, which it
/// only partly understands).
pub const DEBUG_FLAGS: &[&str] = &["-gdwarf-4"];
/// The link skips GNU ld's check that the libraries' own needs leave
/// nothing undefined: for LLVM 19's and 22's `libomptarget.so.NN` it reads
/// all of `libLLVM.so.NN` (57k symbols), three quarters of a build's time.
/// The binary needs the same libraries, symbols and versions; only its
/// dynamic symbols' order differs (`xtask/src/lit_cc.rs`, `QUICK_LINK`).
pub const LINK_FLAGS: &[&str] = &["-Wl,--allow-shlib-undefined"];

/// The compilers and the reference runtime of one release, checked once.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub cc: PathBuf,
    pub cxx: PathBuf,
    /// `clang-N --version` first line, part of every build stamp.
    pub version: String,
    /// The release these compilers belong to.
    pub release: Release,
}

impl Toolchain {
    /// clang-14's toolchain (see [`Toolchain::detect_release`]).
    pub fn detect() -> Result<Toolchain, String> {
        Self::detect_release(Release::Llvm14)
    }

    /// Finds clang-N, clang++-N and release N's reference runtime. Errors
    /// name what is missing and how to get it: the suite is not skipped
    /// silently.
    pub fn detect_release(release: Release) -> Result<Toolchain, String> {
        let mut missing = Vec::new();
        let major = release.major();
        let cc = find_in_path(&format!("clang-{major}"));
        let cxx = find_in_path(&format!("clang++-{major}"));
        if cc.is_none() {
            missing.push(format!("clang-{major} (not on PATH)"));
        }
        if cxx.is_none() {
            missing.push(format!("clang++-{major} (not on PATH)"));
        }
        for path in release.reference_files() {
            if !path.exists() {
                missing.push(format!("{}", path.display()));
            }
        }
        if !missing.is_empty() {
            let how = match release {
                Release::Llvm14 => "On Debian/Ubuntu: apt-get install clang-14 libomp-14-dev",
                _ => {
                    "Run `cargo xtask deps` (it installs the compilers and unpacks LLVM 19's \
                      and 22's runtimes with .ci/llvm-releases.sh)"
                }
            };
            return Err(format!(
                "the C differential suite needs LLVM {major}'s OpenMP offload toolchain; \
                 missing: {}. {how}",
                missing.join(", ")
            ));
        }
        let (cc, cxx) = (cc.unwrap(), cxx.unwrap());
        let out = Command::new(&cc)
            .arg("--version")
            .output()
            .map_err(|e| format!("running {} --version: {e}", cc.display()))?;
        let version = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(Toolchain {
            cc,
            cxx,
            version,
            release,
        })
    }
}

fn find_in_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(exe))
        .find(|candidate| candidate.is_file())
}

/// A built program: its binary and the directory holding its artifacts.
#[derive(Clone, Debug)]
pub struct Built {
    pub binary: PathBuf,
    pub out_dir: PathBuf,
    /// ARGS with templates expanded.
    pub args: Vec<String>,
}

/// Expands `{out}`, `{cc}`, `{cxx}`, `{offload}`, `{debug}` in a word list.
pub fn expand(words: &[String], tc: &Toolchain, out_dir: &Path) -> Vec<String> {
    let mut expanded = Vec::new();
    for word in words {
        match word.as_str() {
            "{offload}" => {
                expanded.extend(OFFLOAD_FLAGS.iter().map(|s| s.to_string()));
                expanded.extend(tc.release.extra_flags());
            }
            "{debug}" => expanded.extend(DEBUG_FLAGS.iter().map(|s| s.to_string())),
            _ => expanded.push(
                word.replace("{out}", &out_dir.to_string_lossy())
                    .replace("{cc}", &tc.cc.to_string_lossy())
                    .replace("{cxx}", &tc.cxx.to_string_lossy()),
            ),
        }
    }
    expanded
}

/// The command lines that build `program` (EXTRA-BUILD ones, then the main
/// compile), each as a word list, all run with `tests/c` as the directory.
fn build_commands(program: &Program, tc: &Toolchain, out_dir: &Path) -> Vec<Vec<String>> {
    let mut commands: Vec<Vec<String>> = program
        .extra_build
        .iter()
        .map(|line| {
            let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            expand(&words, tc, out_dir)
        })
        .collect();
    let compiler = match program.lang {
        Lang::C => &tc.cc,
        Lang::Cxx => &tc.cxx,
    };
    let mut main = vec![compiler.to_string_lossy().into_owned()];
    main.extend(OFFLOAD_FLAGS.iter().map(|s| s.to_string()));
    main.extend(tc.release.extra_flags());
    main.extend(DEBUG_FLAGS.iter().map(|s| s.to_string()));
    main.extend(expand(&program.cflags, tc, out_dir));
    // A path relative to tests/c keeps source locations in libomptarget's
    // messages ("file.c:12:1: ...") independent of where the checkout is.
    main.push(program.file_name.clone());
    main.push("-o".into());
    main.push(out_dir.join(&program.name).to_string_lossy().into_owned());
    main.extend(expand(&program.ldflags, tc, out_dir));
    main.extend(LINK_FLAGS.iter().map(|s| s.to_string()));
    commands.push(main);
    commands
}

/// 64-bit FNV-1a: a stable fingerprint for build stamps.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(state, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Fingerprint of everything a build depends on: the compiler version, the
/// command lines, the program source and every file under `tests/c/lib`.
fn fingerprint(program: &Program, tc: &Toolchain, commands: &[Vec<String>]) -> Result<u64, String> {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    h = fnv1a(h, tc.version.as_bytes());
    for command in commands {
        for word in command {
            h = fnv1a(h, word.as_bytes());
            h = fnv1a(h, &[0]);
        }
        h = fnv1a(h, &[1]);
    }
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    h = fnv1a(h, &read(&program.source)?);
    let lib_dir = paths::programs_dir().join("lib");
    let mut lib_files: Vec<PathBuf> = match std::fs::read_dir(&lib_dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    lib_files.sort();
    for file in lib_files.iter().filter(|p| p.is_file()) {
        h = fnv1a(h, file.to_string_lossy().as_bytes());
        h = fnv1a(h, &read(file)?);
    }
    Ok(h)
}

/// Builds `program` into `target/omptarget/c-tests/<name>/` unless the stamp
/// there shows the same inputs were built before. Errors carry the failing
/// command and the compiler's output.
pub fn build(program: &Program, tc: &Toolchain) -> Result<Built, String> {
    let out_dir = paths::omptarget_dir()
        .join(tc.release.build_dir_name())
        .join(&program.name);
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    // Two tests (or two test processes, e.g. under nextest) may build the
    // same program at once: serialise on a lock file in its directory.
    let _lock = FileLock::acquire(&out_dir.join(".build.lock"))?;
    let binary = out_dir.join(&program.name);
    let args = expand(&program.args, tc, &out_dir);
    let commands = build_commands(program, tc, &out_dir);
    let stamp_path = out_dir.join("build.stamp");
    let stamp = format!("{:016x}\n", fingerprint(program, tc, &commands)?);
    let up_to_date =
        binary.is_file() && std::fs::read_to_string(&stamp_path).is_ok_and(|old| old == stamp);
    if !up_to_date {
        let _ = std::fs::remove_file(&stamp_path);
        for command in &commands {
            let output = Command::new(&command[0])
                .args(&command[1..])
                .current_dir(paths::programs_dir())
                .output()
                .map_err(|e| format!("running {}: {e}", command[0]))?;
            if !output.status.success() {
                return Err(format!(
                    "build failed ({}): {}\n{}{}",
                    output.status,
                    command.join(" "),
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
        }
        std::fs::write(&stamp_path, stamp).map_err(|e| format!("{}: {e}", stamp_path.display()))?;
    }
    Ok(Built {
        binary,
        out_dir,
        args,
    })
}
