//! A program of the suite and the directives in its header comment.
//!
//! The header is the run of `//` lines at the top of the file. Directives:
//! - `// ENV: K=V K2=V2`: environment for both runtimes' runs.
//! - `// CHECK-STDERR`: compare stderr too (hex addresses normalised).
//! - `// CXX`: C++ program, built with clang++-14 (required for `.cpp`).
//! - `// ARGS: a b`: command-line arguments (templates allowed, see below).
//! - `// CFLAGS: ...` / `// LDFLAGS: ...`: extra flags before / after the
//!   source file on the compile line.
//! - `// EXTRA-BUILD: cmd ...`: a command run (in `tests/c`) before the
//!   program is built, for a second artifact; may repeat, runs in order.
//! - `// EXIT: 0 | N | SIGABRT | SIGSEGV`: how the program ends on LLVM 14
//!   (default 0); the reference run is checked against it.
//! - `// NO-VALGRIND: reason`: skip under valgrind (reason required).
//! - `// RELEASES: 14 19 22`: the releases whose clang builds the program
//!   (default: all three; see `release.rs`).
//! - `// EXIT-19: ...` / `// EXIT-22: ...`: how the program ends on that
//!   release's runtime, where it differs from `EXIT`.
//! - `// CHECK-STDERR: 14 ...`: compare stderr only for these releases
//!   (their runtimes word messages differently).
//!
//! Templates in ARGS, CFLAGS, LDFLAGS, EXTRA-BUILD: `{out}` the program's
//! build directory, `{cc}` clang-14, `{cxx}` clang++-14, `{offload}` the
//! offload flags, `{debug}` the debug-info flag.

pub use crate::exec::Exit;
use crate::release::Release;
use std::path::{Path, PathBuf};

fn parse_exit(text: &str) -> Result<Exit, String> {
    match text {
        "SIGABRT" => Ok(Exit::Signal(libc::SIGABRT)),
        "SIGSEGV" => Ok(Exit::Signal(libc::SIGSEGV)),
        other => other
            .parse::<i32>()
            .map(Exit::Code)
            .map_err(|_| format!("EXIT: expected a number, SIGABRT or SIGSEGV, got {other:?}")),
    }
}

/// Source language, which picks the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
}

/// One program of `tests/c` with its parsed header.
#[derive(Clone, Debug)]
pub struct Program {
    /// File stem, e.g. `map_to`: names the build directory and the binary.
    pub name: String,
    /// File name relative to `tests/c`, e.g. `map_to.c`.
    pub file_name: String,
    pub source: PathBuf,
    pub lang: Lang,
    pub env: Vec<(String, String)>,
    pub check_stderr: bool,
    pub args: Vec<String>,
    pub cflags: Vec<String>,
    pub ldflags: Vec<String>,
    pub extra_build: Vec<String>,
    pub expected_exit: Exit,
    pub no_valgrind: Option<String>,
    /// The releases that build and run it (`RELEASES`).
    pub releases: Vec<Release>,
    /// `EXIT-N` overrides of `expected_exit`.
    pub release_exits: Vec<(Release, Exit)>,
    /// `CHECK-STDERR: N ...`: stderr is compared for these releases only.
    pub stderr_releases: Option<Vec<Release>>,
}

impl Program {
    /// Whether stderr is compared for `release`.
    pub fn checks_stderr(&self, release: Release) -> bool {
        self.check_stderr
            && self
                .stderr_releases
                .as_ref()
                .is_none_or(|only| only.contains(&release))
    }

    /// How the program ends on `release`'s own runtime.
    pub fn expected_exit_for(&self, release: Release) -> Exit {
        self.release_exits
            .iter()
            .find(|(r, _)| *r == release)
            .map_or(self.expected_exit, |(_, e)| *e)
    }
}

fn parse_releases(value: &str) -> Result<Vec<Release>, String> {
    value
        .split_whitespace()
        .map(|w| Release::parse(w).ok_or_else(|| format!("{w:?} is not a release (14, 19, 22)")))
        .collect()
}

impl Program {
    /// Parses the header of `source`.
    pub fn parse(source: &Path) -> Result<Program, String> {
        let text =
            std::fs::read_to_string(source).map_err(|e| format!("{}: {e}", source.display()))?;
        let file_name = source
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{}: file name is not UTF-8", source.display()))?
            .to_string();
        let name = file_name
            .rsplit_once('.')
            .map(|(stem, _)| stem.to_string())
            .unwrap_or_else(|| file_name.clone());
        let mut p = Program {
            name,
            file_name: file_name.clone(),
            source: source.to_path_buf(),
            lang: Lang::C,
            env: Vec::new(),
            check_stderr: false,
            args: Vec::new(),
            cflags: Vec::new(),
            ldflags: Vec::new(),
            extra_build: Vec::new(),
            expected_exit: Exit::Code(0),
            no_valgrind: None,
            releases: Release::ALL.to_vec(),
            release_exits: Vec::new(),
            stderr_releases: None,
        };
        let err = |line: usize, msg: String| format!("{file_name}:{line}: {msg}");
        for (idx, line) in text.lines().enumerate() {
            let Some(comment) = line.strip_prefix("//") else {
                break;
            };
            let comment = comment.trim();
            let Some((key, value)) = split_directive(comment) else {
                continue;
            };
            let words = || value.split_whitespace().map(str::to_string);
            match key {
                "ENV" => {
                    for pair in value.split_whitespace() {
                        let (k, v) = pair
                            .split_once('=')
                            .ok_or_else(|| err(idx + 1, format!("ENV: {pair:?} is not K=V")))?;
                        p.env.push((k.to_string(), v.to_string()));
                    }
                }
                "CHECK-STDERR" => {
                    p.check_stderr = true;
                    if !value.is_empty() {
                        p.stderr_releases =
                            Some(parse_releases(value).map_err(|e| err(idx + 1, e))?);
                    }
                }
                "RELEASES" => p.releases = parse_releases(value).map_err(|e| err(idx + 1, e))?,
                "EXIT-19" | "EXIT-22" => {
                    let release = Release::parse(&key[5..]).expect("19 or 22");
                    let exit = parse_exit(value).map_err(|e| err(idx + 1, e))?;
                    p.release_exits.push((release, exit));
                }
                "CXX" => p.lang = Lang::Cxx,
                "ARGS" => p.args.extend(words()),
                "CFLAGS" => p.cflags.extend(words()),
                "LDFLAGS" => p.ldflags.extend(words()),
                "EXTRA-BUILD" => p.extra_build.push(value.to_string()),
                "EXIT" => p.expected_exit = parse_exit(value).map_err(|e| err(idx + 1, e))?,
                "NO-VALGRIND" => {
                    if value.is_empty() {
                        return Err(err(idx + 1, "NO-VALGRIND needs a reason".into()));
                    }
                    p.no_valgrind = Some(value.to_string());
                }
                other => return Err(err(idx + 1, format!("unknown directive {other:?}"))),
            }
        }
        if file_name.ends_with(".cpp") && p.lang != Lang::Cxx {
            return Err(format!("{file_name}: a .cpp program needs `// CXX`"));
        }
        Ok(p)
    }
}

/// Recognises `KEY: value` and bare `KEY` where KEY is upper-case letters and
/// dashes (so prose comments are not mistaken for directives).
fn split_directive(comment: &str) -> Option<(&str, &str)> {
    let (key, value) = match comment.split_once(':') {
        Some((k, v)) if is_directive_key(k) => (k, v.trim()),
        _ if is_directive_key(comment) => (comment, ""),
        _ => return None,
    };
    Some((key, value))
}

fn is_directive_key(s: &str) -> bool {
    s.len() >= 3
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
        && s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// All programs of `dir` (`*.c`, `*.cpp`, not recursing into `lib/`), sorted
/// by name, keeping those whose name contains `filter` if one is given.
pub fn discover(dir: &Path, filter: Option<&str>) -> Result<Vec<Program>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut sources = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let is_program = path.is_file()
            && matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "cpp"));
        if is_program {
            sources.push(path);
        }
    }
    sources.sort();
    let mut programs = Vec::new();
    for source in sources {
        let program = Program::parse(&source)?;
        if filter.is_none_or(|f| program.name.contains(f)) {
            programs.push(program);
        }
    }
    Ok(programs)
}
