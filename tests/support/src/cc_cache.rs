//! The tests' own C builds, made once per staging: every test of
//! `ffi/program/shim/tests` is a process of its own under nextest, and
//! many build the same program (`offload_sum_lib.c` a dozen times, each
//! `edge_*.c` three or four times, the `vec_add.c` kernel eleven times).
//! A build whose compiler (its file, size and time), the variables clang
//! reads (`CPATH`, `LIBRARY_PATH`, ...), arguments (the output's path left
//! out), input files, the files beside them and in named folders (`-I`,
//! `-L` or bare: their headers and libraries), and staging (`target/omptarget/.staged`, which changes with every stage)
//! are the same as an earlier successful one's gets a copy of that
//! build's output instead of a new compile. Kept in
//! `<target>/tmp/cc-cache`; a failed build is never kept.

use crate::paths;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// 64-bit FNV-1a.
fn fnv1a(state: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(state, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The regular files of `dir` (not below it), by name.
fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file());
    files.sort();
    files
}

/// The variables clang reads that change what a build makes.
const COMPILER_ENV: &[&str] = &[
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH",
    "COMPILER_PATH",
    "CCC_OVERRIDE_OPTIONS",
];

/// The compiler itself: the file `compiler` names on `PATH` (links
/// followed), with its size and modification time, so that an upgraded
/// compiler is a new key even without a new staging.
fn compiler_identity(compiler: &str) -> Vec<u8> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(compiler))
        .find(|candidate| candidate.is_file())
        .and_then(|file| file.canonicalize().ok());
    let Some(file) = found else {
        return compiler.as_bytes().to_vec();
    };
    let meta = std::fs::metadata(&file).ok();
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}\0{}\0{modified}",
        file.display(),
        meta.map_or(0, |m| m.len())
    )
    .into_bytes()
}

/// What the build of `out` by `compiler args` depends on (see the module).
fn key(compiler: &str, args: &[OsString], out: &Path) -> u64 {
    let mut h = fnv1a(0xcbf2_9ce4_8422_2325, &compiler_identity(compiler));
    for var in COMPILER_ENV {
        h = fnv1a(h, var.as_bytes());
        h = fnv1a(
            h,
            std::env::var_os(var).unwrap_or_default().as_encoded_bytes(),
        );
    }
    let token = paths::omptarget_dir().join(".staged");
    h = fnv1a(h, &std::fs::read(token).unwrap_or_default());
    let mut read = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        if path == out {
            h = fnv1a(h, b"\0@OUT@");
            continue;
        }
        h = fnv1a(h, b"\0");
        h = fnv1a(h, arg.as_encoded_bytes());
        // A joined search folder (`-I/dir`, `-L/dir`) counts as the folder.
        let bytes = arg.as_encoded_bytes();
        let joined = [b"-I".as_slice(), b"-L"]
            .iter()
            .find(|flag| bytes.len() > 2 && bytes.starts_with(flag))
            .map(|_| Path::new(OsStr::new(&arg.to_string_lossy()[2..])).to_path_buf());
        if path.is_file() {
            read.push(path.to_path_buf());
            read.extend(path.parent().map(files_of).unwrap_or_default());
        } else if path.is_dir() {
            read.extend(files_of(path));
        } else if let Some(dir) = joined.filter(|d| d.is_dir()) {
            read.extend(files_of(&dir));
        }
    }
    for file in read {
        h = fnv1a(h, file.as_os_str().as_encoded_bytes());
        h = fnv1a(h, &std::fs::read(&file).unwrap_or_default());
    }
    h
}

/// Build `out` with `compiler args` (which name `out` after `-o`), or copy
/// the cached output of the same build. The output of the compiler when
/// it ran; an empty successful one on a copy.
pub fn build(compiler: &str, args: &[OsString], out: &Path) -> std::io::Result<Output> {
    let cache = paths::tmp_dir().join("cc-cache");
    let entry = cache.join(format!("{:016x}", key(compiler, args, out)));
    if entry.is_file() {
        std::fs::copy(&entry, out)?;
        return Ok(Output {
            status: success(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        });
    }
    let output = Command::new(compiler).args(args).output()?;
    if output.status.success() {
        // Copied beside the entry and renamed into place: a concurrent
        // test process sees a whole entry or none.
        std::fs::create_dir_all(&cache)?;
        let tmp = cache.join(format!(".{}-{}", std::process::id(), unique()));
        std::fs::copy(out, &tmp)?;
        std::fs::rename(&tmp, &entry)?;
    }
    Ok(output)
}

/// A number no other call of this process returned.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The exit status 0, for a build served from the cache.
fn success() -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(0)
}

/// `args` of a command as owned strings, for [`build`].
pub fn args_of(cmd: &Command) -> Vec<OsString> {
    cmd.get_args().map(OsStr::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A "compiler" that logs its call and writes its first argument's
    /// content to the output (`fake SOURCE -o OUT`).
    fn fake_compiler(dir: &Path) -> PathBuf {
        let path = dir.join("fake-cc");
        let log = dir.join("calls");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho called >> {}\ncat \"$1\" > \"$3\"\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn calls(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    fn build_into(cc: &Path, source: &Path, out: &Path) {
        let args: Vec<OsString> = vec![source.into(), "-o".into(), out.into()];
        let output = build(cc.to_str().unwrap(), &args, out).unwrap();
        assert!(output.status.success());
    }

    #[test]
    fn the_same_build_runs_once_and_a_changed_input_runs_again() {
        let dir = crate::Scratch::new("cc-cache");
        let cc = fake_compiler(dir.path());
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let source = src.join("p.c");
        std::fs::write(&source, "one").unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        build_into(&cc, &source, &a);
        build_into(&cc, &source, &b);
        assert_eq!(calls(dir.path()), 1, "the second build was not a copy");
        assert_eq!(std::fs::read(&b).unwrap(), b"one");
        // A header beside the source counts as an input.
        std::fs::write(src.join("p.h"), "header").unwrap();
        build_into(&cc, &source, &c);
        assert_eq!(
            calls(dir.path()),
            2,
            "a new file beside the source did not rebuild"
        );
        std::fs::write(&source, "two").unwrap();
        build_into(&cc, &source, &c);
        assert_eq!(calls(dir.path()), 3, "a changed source did not rebuild");
        assert_eq!(std::fs::read(&c).unwrap(), b"two");
    }
}
