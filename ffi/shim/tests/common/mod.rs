//! Shared harness of the shim's C-level tests: the staged `libomptarget.so`,
//! clang-14 builds of the programs in `ffi/shim/tests/c/`, isolated copies
//! of the test plugin (conf and call log), and runs with a timeout.
//!
//! Every program runs with a clean offload environment (no inherited
//! `LIBOMPTARGET_*`, `OMPTARGET_*`, `OMP_TARGET_OFFLOAD`) and
//! `LD_LIBRARY_PATH` set to the staged library folder, so the clang-14
//! binaries load our shim instead of LLVM's.
#![allow(dead_code)] // each test binary uses a subset

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The default limit for one program run; every run has one.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The clang-14 flags of an offload build for the host as the device.
pub const OFFLOAD: &[&str] = &["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"];

const CLANG: &str = "clang-14";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// `ffi/shim/tests/c/<name>`: a C source of these tests.
pub fn c_source(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name);
    assert!(path.is_file(), "missing C source {}", path.display());
    path
}

/// Where `cargo run -p xtask -- stage` put the libraries.
pub struct Staged {
    /// `target/omptarget/lib`: `libomptarget.so` (the shim) and the shipped
    /// host plugin.
    pub lib_dir: PathBuf,
    /// `target/omptarget/test-plugins`.
    pub test_plugin_dir: PathBuf,
}

/// Stage the shim and the plugins once per test process.
pub fn staged() -> &'static Staged {
    static STAGED: OnceLock<Staged> = OnceLock::new();
    STAGED.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .current_dir(workspace_root())
            .args(["run", "-q", "-p", "xtask", "--", "stage"])
            .output()
            .expect("running cargo run -p xtask -- stage");
        assert!(
            output.status.success(),
            "xtask stage failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let staged = Staged {
            lib_dir: target.join("omptarget/lib"),
            test_plugin_dir: target.join("omptarget/test-plugins"),
        };
        for lib in [
            staged.lib_dir.join("libomptarget.so"),
            staged.lib_dir.join("libomptarget.rtl.x86_64.so"),
            staged.test_plugin_dir.join("libomptarget.rtl.test.so"),
        ] {
            assert!(lib.is_file(), "{} was not staged", lib.display());
        }
        staged
    })
}

/// A scratch directory under cargo's per-target temp dir. Removed on drop,
/// except when the test is failing (its path is printed to look at).
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "shim-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("creating a scratch dir");
        Scratch { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept scratch dir {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Compile `sources` (files of `ffi/shim/tests/c/`) with clang-14 into
/// `out`, with `flags` before the sources and `libs` after them.
pub fn clang(sources: &[&str], out: &Path, flags: &[&str], libs: &[&str]) {
    let mut cmd = Command::new(CLANG);
    cmd.args(["-O1", "-Wall", "-Werror"]).args(flags);
    for source in sources {
        cmd.arg(c_source(source));
    }
    cmd.arg("-o").arg(out).args(libs);
    let output = match cmd.output() {
        Ok(output) => output,
        Err(err) => panic!("cannot run {CLANG} (install clang-14 and libomp-14-dev): {err}"),
    };
    assert!(
        output.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `-L<staged lib dir> -lomptarget`, forced NEEDED even if unused.
pub fn link_shim() -> Vec<String> {
    vec![
        format!("-L{}", staged().lib_dir.display()),
        "-Wl,--no-as-needed".to_owned(),
        "-lomptarget".to_owned(),
        "-Wl,--as-needed".to_owned(),
    ]
}

/// The dynamic symbols `nm -D` lists for `binary` as (kind, name).
pub fn dynamic_symbols(binary: &Path) -> Vec<(String, String)> {
    let out = Command::new("nm")
        .arg("-D")
        .arg(binary)
        .output()
        .expect("run nm (binutils)");
    assert!(out.status.success(), "nm -D {} failed", binary.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().rev();
            let name = fields.next()?;
            let kind = fields.next()?;
            Some((kind.to_owned(), name.split('@').next()?.to_owned()))
        })
        .collect()
}

/// True if `binary` references or defines the dynamic symbol `name`.
pub fn has_dynamic_symbol(binary: &Path, name: &str) -> bool {
    dynamic_symbols(binary).iter().any(|(_, n)| n == name)
}

/// An isolated copy of the test plugin with its conf and call log.
pub struct TestPlugin {
    /// The copied library (what `OMPTARGET_PLUGINS` names).
    pub path: PathBuf,
    /// Its call log.
    pub log_path: PathBuf,
}

impl TestPlugin {
    /// Copy the staged test plugin into `scratch/<dir>/` and write its conf
    /// (`conf` lines, `key=value`).
    pub fn new(scratch: &Scratch, dir: &str, conf: &[&str]) -> Self {
        let folder = scratch.join(dir);
        std::fs::create_dir_all(&folder).expect("creating the plugin dir");
        let path = folder.join("libomptarget.rtl.test.so");
        std::fs::copy(
            staged().test_plugin_dir.join("libomptarget.rtl.test.so"),
            &path,
        )
        .expect("copying the test plugin");
        let log_path = folder.join("calls.log");
        let mut text = format!("log={}\n", log_path.display());
        for line in conf {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(folder.join("libomptarget.rtl.test.so.conf"), text)
            .expect("writing the plugin conf");
        TestPlugin { path, log_path }
    }

    /// The call log so far (empty if the plugin never wrote one).
    pub fn log(&self) -> CallLog {
        CallLog {
            lines: std::fs::read_to_string(&self.log_path)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The test plugin's call log: one line per entry call.
#[derive(Clone)]
pub struct CallLog {
    pub lines: Vec<String>,
}

impl fmt::Display for CallLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.lines.iter().enumerate() {
            writeln!(f, "{i:4}: {line}")?;
        }
        Ok(())
    }
}

/// The entry name of a log line (its first token).
pub fn entry(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

impl CallLog {
    /// Indices of the lines whose entry is `name`.
    pub fn positions(&self, name: &str) -> Vec<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| entry(l) == name)
            .map(|(i, _)| i)
            .collect()
    }

    /// How many lines call `name`.
    pub fn count(&self, name: &str) -> usize {
        self.positions(name).len()
    }

    /// The lines whose entry starts with `prefix` (`run_target` matches the
    /// sync, async and team variants).
    pub fn calls_starting(&self, prefix: &str) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| entry(l).starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// Split the log after each `fini` line: one segment per loaded
    /// instance of the plugin (a trailing segment without `fini` is kept).
    pub fn instances(&self) -> Vec<CallLog> {
        let mut out = Vec::new();
        let mut current = Vec::new();
        for line in &self.lines {
            current.push(line.clone());
            if entry(line) == "fini" {
                out.push(CallLog {
                    lines: std::mem::take(&mut current),
                });
            }
        }
        if !current.is_empty() {
            out.push(CallLog { lines: current });
        }
        out
    }

    /// The plugin's memory contract held: every `data_delete` frees a
    /// pointer that a `data_alloc` of the same device returned and that was
    /// not freed since, and nothing allocated is still live at the end.
    pub fn assert_every_alloc_freed_once(&self) {
        let mut live: Vec<(String, String)> = Vec::new();
        for line in &self.lines {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.first().copied() {
                Some("data_alloc") => {
                    assert_eq!(fields.len(), 5, "malformed line {line:?}\n{self}");
                    if fields[4] != "null" {
                        live.push((fields[1].to_owned(), fields[4].to_owned()));
                    }
                }
                Some("data_delete") => {
                    assert_eq!(fields.len(), 3, "malformed line {line:?}\n{self}");
                    let key = (fields[1].to_owned(), fields[2].to_owned());
                    let Some(at) = live.iter().position(|k| *k == key) else {
                        panic!("{line:?} frees a pointer not allocated on that device\n{self}");
                    };
                    live.swap_remove(at);
                }
                _ => {}
            }
        }
        assert!(
            live.is_empty(),
            "allocations never returned to the plugin: {live:?}\n{self}"
        );
    }
}

/// One program run to set up.
pub struct Run {
    cmd: Command,
    timeout: Duration,
    scratch_out: PathBuf,
}

impl Run {
    /// Run `program` from `scratch` with the staged shim on
    /// `LD_LIBRARY_PATH` and no inherited offload settings.
    pub fn new(scratch: &Scratch, program: &Path) -> Self {
        let mut cmd = Command::new(program);
        cmd.current_dir(scratch.path())
            .env("LD_LIBRARY_PATH", &staged().lib_dir)
            .stdin(Stdio::null());
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("LIBOMPTARGET_")
                || key_text.starts_with("OMPTARGET_")
                || key_text.starts_with("OMP_")
                || key_text.starts_with("KMP_")
                || key_text == "LD_PRELOAD"
                || key_text == "RUST_BACKTRACE"
            {
                cmd.env_remove(&key);
            }
        }
        Run {
            cmd,
            timeout: RUN_TIMEOUT,
            scratch_out: scratch.path().to_owned(),
        }
    }

    /// Use `plugin` instead of the discovered plugins.
    pub fn plugin(self, plugin: &TestPlugin) -> Self {
        self.env("OMPTARGET_PLUGINS", &plugin.path)
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Run to the end, or kill it at the timeout (a failed test: hang or
    /// deadlock).
    pub fn run(mut self) -> Outcome {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let out_path = self.scratch_out.join(format!("run{n}.stdout"));
        let err_path = self.scratch_out.join(format!("run{n}.stderr"));
        let out = std::fs::File::create(&out_path).expect("creating the stdout file");
        let err = std::fs::File::create(&err_path).expect("creating the stderr file");
        let described = format!("{:?}", self.cmd);
        let mut child = self
            .cmd
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting for the program") {
                break status;
            }
            if started.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{described} did not finish within {:?} (hang or deadlock)\nstdout:\n{}\nstderr:\n{}",
                    self.timeout,
                    std::fs::read_to_string(&out_path).unwrap_or_default(),
                    std::fs::read_to_string(&err_path).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Outcome {
            described,
            status,
            stdout: std::fs::read_to_string(&out_path).expect("reading stdout"),
            stderr: std::fs::read_to_string(&err_path).expect("reading stderr"),
        }
    }
}

/// What a program run did.
pub struct Outcome {
    pub described: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n{}\n--- stdout:\n{}--- stderr:\n{}",
            self.described, self.status, self.stdout, self.stderr
        )
    }
}

impl Outcome {
    /// Exit status 0, or panic with everything the run printed.
    pub fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "the program failed:\n{self}");
        self
    }

    /// The run ended by a signal `signal` (SIGABRT for LLVM's fatal errors).
    pub fn assert_signal(&self, signal: i32) -> &Self {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            self.status.signal(),
            Some(signal),
            "expected signal {signal}:\n{self}"
        );
        self
    }

    /// The value of the stdout line `key=value` (the programs print their
    /// results that way).
    pub fn value(&self, key: &str) -> &str {
        let prefix = format!("{key}=");
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no line {key}=... on stdout:\n{self}"))
    }
}
