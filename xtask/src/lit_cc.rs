//! `xtask lit-cc COMPILER ARGS...`: the compiler of `scripts/llvm-lit.py`'s
//! runs: clang, once per distinct build.
//!
//! A lit suite is run on the release's runtime and on ours with the same
//! binaries, and lit's RUN lines compile and run in one go, so each test
//! would be compiled once per run. This wrapper stands in for
//! `%clang`/`%clangxx`: a build whose command line (the run's own folder,
//! `LIT_CC_CACHE_ROOT`, written as `@ROOT@`), working directory and input
//! files are the same as an earlier successful build's of this invocation of
//! llvm-lit.py gets that build's output file, standard output, standard
//! error and status back instead of a new build. Anything else (no `-o
//! FILE`, a failed build, an output written to standard output) runs the
//! compiler as it is, and so does a build that names the run's folder
//! anywhere but in its output (a library of the test linked by path, an
//! rpath: the binary would record the first run's folder). The cache
//! (`LIT_CC_CACHE_DIR`) is emptied by llvm-lit.py when it starts, so nothing
//! outlives the libraries it linked.
//!
//! The third run (ours, linked against our library's own name) builds the
//! same programs with other link flags (`-L`, `-Wl,-rpath`), so its command
//! lines differ and the cache above misses. So a build that compiles and
//! links one source file in one go is made in two steps, as clang's driver
//! makes it itself: the source compiled alone (`-c`, without the link-only
//! flags) into an object kept under the compile's own key, then linked with
//! the command line as given (the source replaced by that object). The
//! other run's build of the same source then only links. The two steps are
//! used only when both succeed and print nothing; otherwise (a warning, an
//! error) the build runs again in one go, so that what the test sees
//! (output, status, diagnostics) is the one-go build's.
//!
//! Why Rust and not the Python it was: the wrapper runs for every build of
//! every run, about 1,500 times in CI's lit step, and a Python start with
//! its imports cost 0.09 CPU-s each (a cache hit: 0.09 s in Python, a few
//! milliseconds here), about 130 of the step's 570 CPU-s.

use anyhow::{Context, Result};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Source files clang compiles (a language given by `-x` is not guessed).
const SOURCE_SUFFIXES: &[&str] = &[".c", ".cpp", ".cc", ".cxx", ".C"];
/// Options that take the next argument as their value: a source file right
/// after one of them is that option's value, not an input.
const SEPARATE_VALUE: &[&str] = &[
    "-o",
    "-x",
    "-include",
    "-imacros",
    "-Xclang",
    "-Xlinker",
    "-Xopenmp-target",
    "-mllvm",
    "-MF",
    "-MT",
    "-MQ",
    "-I",
    "-L",
    "-D",
    "-U",
    "-isystem",
    "-idirafter",
    "-iquote",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xoffload-linker",
    "-l",
];
/// Options that stop a build from being a plain compile-and-link of sources.
const NOT_A_LINK: &[&str] = &[
    "-c",
    "-S",
    "-E",
    "-M",
    "-MM",
    "-fsyntax-only",
    "-emit-llvm",
    "-###",
    "-x",
    "-v",
];
/// Options after which clang stops before the link.
const NO_LINK: &[&str] = &["-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "-###"];
/// Added to every build that links. Linking an executable against LLVM
/// 19's or 22's `libomptarget.so.NN`, GNU ld by default reads that
/// library's own needs to check they leave nothing undefined, and one of
/// them is `libLLVM.so.NN` with 57k dynamic symbols: a lit test's link
/// took 0.57 CPU-s with the check and 0.13 without (LLVM 22,
/// `mapping/array_section_implicit_capture.c`). Skipping the check
/// changes no need, symbol, version or relocation of the binary; only the
/// order of its dynamic symbols (and so of its PLT slots) differs, which
/// the dynamic loader does not read. The runtime the test runs on loads
/// its own needs whatever the link checked.
const QUICK_LINK: &str = "-Wl,--allow-shlib-undefined";
/// Flags only a link reads, left out of the compile step.
const LINK_ONLY: &[&str] = &["-shared", "-static", "-rdynamic", "-pie", "-no-pie"];

/// Where a build's results are kept, and the run's folder.
pub struct Cache {
    pub dir: PathBuf,
    /// The run's own folder (`LIT_CC_CACHE_ROOT`), or empty.
    pub root: String,
}

/// A finished build as the test sees it.
pub struct Built {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// `xtask lit-cc COMPILER ARGS...`: build, print the build's streams and
/// exit with its status; or become the compiler where nothing is cached.
pub fn main(args: &[std::ffi::OsString]) -> Result<()> {
    // The key is text: a build with an argument that is not UTF-8 is run
    // as it is, uncached.
    let Some(text) = as_text(args) else {
        let err = Command::new(&args[0]).args(&args[1..]).exec();
        return Err(err).with_context(|| format!("running {}", args[0].to_string_lossy()));
    };
    let Some((compiler, args)) = text.split_first() else {
        anyhow::bail!("usage: xtask lit-cc COMPILER ARGS...");
    };
    let args = &with_quick_link(args);
    let cache = std::env::var_os("LIT_CC_CACHE_DIR")
        .filter(|dir| !dir.is_empty())
        .map(|dir| Cache {
            dir: PathBuf::from(dir),
            root: std::env::var("LIT_CC_CACHE_ROOT").unwrap_or_default(),
        });
    let built = match cache {
        Some(cache) if cacheable(args, &cache).is_some() => build(compiler, args, &cache)?,
        _ => {
            let err = Command::new(compiler).args(args).exec();
            return Err(err).with_context(|| format!("running {compiler}"));
        }
    };
    std::io::stdout().write_all(&built.stdout)?;
    std::io::stderr().write_all(&built.stderr)?;
    std::process::exit(built.code);
}

/// `args`, and [`QUICK_LINK`] when the build links into a file (not a
/// query such as `--version`, which has no `-o`).
fn with_quick_link(args: &[String]) -> Vec<String> {
    let mut args = args.to_vec();
    let links = output_of(&args).is_some() && !args.iter().any(|a| NO_LINK.contains(&a.as_str()));
    if links {
        args.push(QUICK_LINK.into());
    }
    args
}

/// The arguments as text, or None when one is not UTF-8.
fn as_text(args: &[std::ffi::OsString]) -> Option<Vec<String>> {
    args.iter().map(|a| a.to_str().map(str::to_owned)).collect()
}

/// The output file of a build the cache may keep: one with `-o FILE` (not
/// standard output) that reads no standard input (its content is not in
/// the key) and names the run's folder nowhere else.
fn cacheable<'a>(args: &'a [String], cache: &Cache) -> Option<&'a str> {
    let out = output_of(args)?;
    let reads_stdin = args
        .iter()
        .enumerate()
        .any(|(i, a)| a == "-" && (i == 0 || args[i - 1] != "-o"));
    if reads_stdin {
        return None;
    }
    let names_root = !cache.root.is_empty()
        && args
            .iter()
            .any(|a| a != out && a.contains(cache.root.as_str()));
    (!names_root).then_some(out)
}

/// The `-o` file, or None (no -o, or standard output).
fn output_of(args: &[String]) -> Option<&str> {
    let out = args.iter().enumerate().find_map(|(i, a)| {
        if a == "-o" {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix("-o").filter(|v| !v.is_empty())
        }
    })?;
    (out != "-").then_some(out)
}

/// Build as `compiler args` would, from the cache where it can (the
/// module's comment); `args` is [`cacheable`].
pub fn build(compiler: &str, args: &[String], cache: &Cache) -> Result<Built> {
    let out = cacheable(args, cache).context("not a cacheable build")?;
    let entry = cache
        .dir
        .join(key_of(compiler, args, &cache.root, Some(out))?);
    if entry.is_dir() {
        let hit = || -> std::io::Result<Built> {
            std::fs::copy(entry.join("output"), out)?;
            Ok(Built {
                code: 0,
                stdout: std::fs::read(entry.join("stdout"))?,
                stderr: std::fs::read(entry.join("stderr"))?,
            })
        };
        // An entry that cannot be read back is built anew.
        if let Ok(built) = hit() {
            return Ok(built);
        }
    }
    let done = build_anew(compiler, args, out, cache)?;
    let code = exit_code(done.status);
    if code == 0 && Path::new(out).is_file() {
        store(
            &cache.dir,
            &entry,
            &[("output", Path::new(out))],
            &done.stdout,
            &done.stderr,
        );
    }
    Ok(Built {
        code,
        stdout: done.stdout,
        stderr: done.stderr,
    })
}

/// The status a shell gives a command: its exit code, or 128 + the signal
/// that ended it (a crashed compiler is a failed build either way).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

/// The compiler with `args`, its standard input the wrapper's own (a
/// build from standard input is not cached: [`cacheable`]).
fn compiler_command(
    compiler: &str,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> Command {
    let mut cmd = Command::new(compiler);
    cmd.args(args).stdin(std::process::Stdio::inherit());
    cmd
}

/// What a build's result depends on: the compiler, the arguments with the
/// run's folder taken out, the working directory likewise, and the content
/// of every argument that names a file (but `out`). 128 bits of XXH3: the
/// cache lives for one invocation, and its inputs are the suite's own.
fn key_of(compiler: &str, args: &[String], root: &str, out: Option<&str>) -> Result<String> {
    let norm = |s: &str| {
        if root.is_empty() {
            s.to_string()
        } else {
            s.replace(root, "@ROOT@")
        }
    };
    let cwd = std::env::current_dir()?;
    let mut h = twox_hash::XxHash3_128::new();
    for part in [compiler.to_string(), norm(&cwd.to_string_lossy())]
        .into_iter()
        .chain(args.iter().map(|a| norm(a)))
    {
        h.write(part.as_bytes());
        h.write(b"\0");
    }
    for arg in args {
        // `-I dir`, `-L dir` are folders; -Wl,... and flags are not files.
        if Some(arg.as_str()) != out && Path::new(arg).is_file() {
            let content = std::fs::read(arg).with_context(|| format!("reading {arg}"))?;
            h.write(&twox_hash::XxHash3_128::oneshot(&content).to_le_bytes());
        }
    }
    Ok(format!("{:032x}", h.finish_128()))
}

/// A build of exactly one source file into a linked `out`: the index of the
/// source in `args` and the compile-only command (`-c`, no `-o`, no
/// link-only flag); None for any other build.
fn split(args: &[String], out: &str) -> Option<(usize, Vec<String>)> {
    if args
        .iter()
        .any(|a| NOT_A_LINK.contains(&a.as_str()) || a.starts_with("-x"))
    {
        return None;
    }
    let sources: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            SOURCE_SUFFIXES.iter().any(|s| a.ends_with(s))
                && !a.starts_with('-')
                && (*i == 0 || !SEPARATE_VALUE.contains(&args[i - 1].as_str()))
                && Path::new(a).is_file()
        })
        .map(|(i, _)| i)
        .collect();
    let [source] = sources[..] else {
        return None;
    };
    let mut compile = Vec::new();
    let mut skip = false;
    let with_out = format!("-o{out}");
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if ["-o", "-L", "-l", "-Xlinker"].contains(&a.as_str()) {
            skip = true; // the option and its value
            continue;
        }
        if a.starts_with("-L")
            || a.starts_with("-l")
            || a.starts_with("-Wl,")
            || *a == with_out
            || LINK_ONLY.contains(&a.as_str())
        {
            continue;
        }
        compile.push(a.clone());
    }
    if compile.iter().any(|a| a == out) {
        return None;
    }
    // A flag only the link reads (-fno-openmp-implicit-rpath, say) would
    // warn that the compile did not use it; the link step still gets it.
    compile.extend(["-c".into(), "-Wno-unused-command-line-argument".into()]);
    Some((source, compile))
}

/// Build `out` anew: in two steps where [`split`] allows and both steps
/// are silent, else in one go.
fn build_anew(compiler: &str, args: &[String], out: &str, cache: &Cache) -> Result<Output> {
    if let Some((source, compile)) = split(args, out) {
        if let Some(object) = object_of(compiler, &compile, cache)? {
            let mut link: Vec<OsString> = args.iter().map(OsString::from).collect();
            link[source] = object.into_os_string();
            let done = compiler_command(compiler, &link).output()?;
            if done.status.success() && done.stdout.is_empty() && done.stderr.is_empty() {
                return Ok(done);
            }
        }
    }
    compiler_command(compiler, args)
        .output()
        .with_context(|| format!("running {compiler}"))
}

/// The cached object of a compile-only command, compiled now if this
/// invocation has not compiled it yet; None if the compile failed or
/// printed anything.
fn object_of(compiler: &str, compile: &[String], cache: &Cache) -> Result<Option<PathBuf>> {
    let entry = cache.dir.join(format!(
        "obj-{}",
        key_of(compiler, compile, &cache.root, None)?
    ));
    let object = entry.join("output.o");
    if object.is_file() {
        return Ok(Some(object));
    }
    // A cache that cannot be written (no room, say) only costs the split:
    // the build is then made in one go.
    if std::fs::create_dir_all(&cache.dir).is_err() {
        return Ok(None);
    }
    let Ok(tmp) = unique_in(&cache.dir, ".obj-", ".o", |p| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .map(drop)
    }) else {
        return Ok(None);
    };
    let compiled = compiler_command(compiler, compile)
        .arg("-o")
        .arg(&tmp)
        .output()
        .with_context(|| format!("running {compiler}"));
    let silent = compiled.as_ref().is_ok_and(|done| {
        done.status.success() && done.stdout.is_empty() && done.stderr.is_empty()
    });
    if silent {
        store(&cache.dir, &entry, &[("output.o", &tmp)], b"", b"");
    }
    let _ = std::fs::remove_file(&tmp);
    compiled?;
    Ok((silent && object.is_file()).then_some(object))
}

/// Keep `files` (name, path) and the streams as `entry` of the cache,
/// written beside it and renamed into place: a parallel lit job sees a
/// whole entry or none. Best effort: an entry that cannot be written (no
/// room, or another job stored it first: the rename finds a full folder)
/// is not kept, and the build it would have kept stands either way.
fn store(cache: &Path, entry: &Path, files: &[(&str, &Path)], stdout: &[u8], stderr: &[u8]) {
    let Ok(tmp) = std::fs::create_dir_all(cache)
        .map_err(anyhow::Error::from)
        .and_then(|()| unique_in(cache, ".new-", "", |p| std::fs::create_dir(p)))
    else {
        return;
    };
    let fill = || -> std::io::Result<()> {
        for (name, path) in files {
            // `fs::copy` keeps the permission bits (an executable stays one).
            std::fs::copy(path, tmp.join(name))?;
        }
        std::fs::write(tmp.join("stdout"), stdout)?;
        std::fs::write(tmp.join("stderr"), stderr)?;
        std::fs::rename(&tmp, entry)
    };
    if fill().is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

/// `dir/PREFIX<unique>SUFFIX`, made by `create` (which fails with
/// `AlreadyExists` where the name is taken: a parallel job's).
fn unique_in(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    create: impl Fn(&Path) -> std::io::Result<()>,
) -> Result<PathBuf> {
    let pid = std::process::id();
    for n in 0u32.. {
        let path = dir.join(format!("{prefix}{pid}-{n}{suffix}"));
        match create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    unreachable!("u32 names run out")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_build_with_an_argument_that_is_not_text_is_not_taken_as_text() {
        use std::os::unix::ffi::OsStringExt;
        let text: Vec<std::ffi::OsString> = ["clang", "-c", "a.c"].map(Into::into).to_vec();
        assert_eq!(as_text(&text), Some(words("clang -c a.c")));
        let mut raw = text.clone();
        raw.push(std::ffi::OsString::from_vec(b"-DX=\xff".to_vec()));
        raw.push(std::ffi::OsString::from_vec(vec![b'-', b'D', 0xff]));
        assert_eq!(as_text(&raw), None);
    }

    #[test]
    fn only_a_build_that_links_into_a_file_skips_the_needs_check() {
        let quick = |s: &str| with_quick_link(&words(s)).contains(&QUICK_LINK.to_string());
        assert!(quick("-fopenmp a.c -o a.out -lomptarget"));
        assert!(quick("-shared a.o -o liba.so"));
        assert!(!quick("-fopenmp -c a.c -o a.o"));
        assert!(!quick("-E a.c -o a.i"));
        assert!(!quick("--version"));
        assert!(!quick("a.c -o -"));
    }

    #[test]
    fn the_output_is_the_o_option_and_standard_output_is_none() {
        assert_eq!(output_of(&words("-c a.c -o a.o")), Some("a.o"));
        assert_eq!(output_of(&words("a.c -oa.out")), Some("a.out"));
        assert_eq!(output_of(&words("a.c -o -")), None);
        assert_eq!(output_of(&words("a.c")), None);
    }

    #[test]
    fn a_build_naming_the_runs_folder_outside_its_output_is_not_cached() {
        let cache = Cache {
            dir: "/c".into(),
            root: "/run/a".into(),
        };
        assert!(cacheable(&words("x.c -o /run/a/x"), &cache).is_some());
        assert!(cacheable(&words("x.c /run/a/lib.so -o /run/a/x"), &cache).is_none());
        // Standard input as the source: its content is not in the key.
        assert!(cacheable(&words("-x c - -o /run/a/x"), &cache).is_none());
    }

    #[test]
    fn the_compile_step_drops_link_only_flags_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("p.c");
        std::fs::write(&src, "int main(void){return 0;}").unwrap();
        let src = src.to_string_lossy().into_owned();
        let args = words(&format!(
            "-fopenmp -L /l -lm -Wl,-rpath,/l {src} -shared -Xlinker -z -o out -I inc"
        ));
        let (i, compile) = split(&args, "out").expect("one source");
        assert_eq!(args[i], src);
        assert_eq!(
            compile,
            words(&format!(
                "-fopenmp {src} -I inc -c -Wno-unused-command-line-argument"
            ))
        );
        // Not a plain compile-and-link: already a compile, or no source.
        assert!(split(&words(&format!("-c {src} -o out")), "out").is_none());
        assert!(split(&words("x.o -o out"), "out").is_none());
    }
}
