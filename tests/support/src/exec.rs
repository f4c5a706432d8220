//! The one program runner of the tests: a command run to its end or to a
//! hang limit that is reported (the run's [`RunOutput::exit`] is `None`)
//! rather than panicked on, in its own process group (killed whole at the
//! limit), with no core files (`RLIMIT_CORE` 0: expected aborts leave
//! none in the tree), its stdin empty and its output captured in
//! anonymous memory files, which, unlike pipes, never wait for a process
//! that inherited them (a fork child, a daemon the program started).
//! [`command`] prepares a built program under one runtime; [`crate::Run`]
//! (the shim's and plugins' tests) and the MPI suite's job launcher build
//! their commands and run them here.

use std::ffi::CStr;
use std::fmt;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Prefixes of inherited variables removed from a program's environment:
/// they change how libomp, libomptarget, our runtime or the loader behave
/// or what they print; a test sets the ones it means.
pub const SCRUBBED_PREFIXES: &[&str] = &["LIBOMPTARGET_", "OMPTARGET_", "OMP_", "KMP_", "LD_"];
/// Inherited variables removed besides those.
pub const SCRUBBED: &[&str] = &["RUST_BACKTRACE"];

/// Removes the inherited variables that [`SCRUBBED_PREFIXES`] and
/// [`SCRUBBED`] name from `cmd`'s environment.
pub fn clean_offload_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if SCRUBBED_PREFIXES.iter().any(|p| key_text.starts_with(p))
            || SCRUBBED.contains(&key_text.as_ref())
        {
            cmd.env_remove(&key);
        }
    }
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Normal exit with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => write!(f, "signal {s} ({})", signal_name(*s)),
        }
    }
}

/// Name of the signals the programs can meet.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        _ => "other",
    }
}

/// What one run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// How it ended; `None` if it was killed at the timeout.
    pub exit: Option<Exit>,
    /// The status the OS gave, `None` at the timeout.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl RunOutput {
    /// "exit code 0", "signal 6 (SIGABRT)" or "timed out".
    pub fn exit_text(&self) -> String {
        match self.exit {
            Some(e) => e.to_string(),
            None => format!("timed out after {:.0?}", self.elapsed),
        }
    }
}

/// Prepares `program` (a path) with `args`, the clean offload environment
/// (the programs' ENV directive is the only way they get such settings), `env`
/// and `LD_LIBRARY_PATH=lib_dir` (a directory, or a `:`-separated list).
pub fn command(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    lib_dir: impl AsRef<std::ffi::OsStr>,
) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args);
    clean_offload_env(&mut cmd);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.env("LD_LIBRARY_PATH", lib_dir.as_ref());
    cmd
}

/// An anonymous in-memory file for one of the child's streams.
fn capture(name: &CStr) -> std::io::Result<File> {
    // SAFETY: a NUL-terminated name and valid flags; on success the
    // descriptor is new and owned by the `File` made of it below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// What the child wrote into `file`, as text (lossy UTF-8). Read with
/// `pread`: the file offset is shared with every process that inherited
/// the stream (a fork child may still be writing), so moving it would make
/// such a writer overwrite the start of the capture.
fn captured(file: &File) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = file.read_at(&mut chunk, bytes.len() as u64)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Runs `cmd` to completion or until `timeout`, then kills its whole process
/// group. stdin is empty; stdout and stderr are captured (lossy UTF-8).
pub fn run(mut cmd: Command, timeout: Duration) -> std::io::Result<RunOutput> {
    let stdout = capture(c"stdout")?;
    let stderr = capture(c"stderr")?;
    cmd.stdin(Stdio::null())
        .stdout(stdout.try_clone()?)
        .stderr(stderr.try_clone()?);
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe calls (setpgid, setrlimit); it touches no Rust state.
    unsafe {
        cmd.pre_exec(|| {
            // Own process group, so a timeout can kill helpers it started.
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Expected aborts must not litter the tree with core files.
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    // Our copies of the child's ends go with the command (its `Stdio`s).
    drop(cmd);
    let pid = child.id() as libc::pid_t;
    let mut hang_report = None;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            // SAFETY: plain syscall on the process group created above; the
            // child is not reaped yet, so the id still names that group.
            unsafe { libc::kill(-pid, libc::SIGSTOP) };
            hang_report = Some(thread_stacks(pid));
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let exit = status.map(|s| match (s.code(), s.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    });
    let mut stderr = captured(&stderr)?;
    if let Some(report) = hang_report {
        stderr.push_str(&report);
    }
    Ok(RunOutput {
        exit,
        status,
        stdout: captured(&stdout)?,
        stderr,
        elapsed,
    })
}

/// Where each thread of the stopped process `pid` waits, for the report of
/// a run killed at its hang limit: a hang seen once in a CI run must be
/// diagnosable from that run's log alone. Each thread's name and kernel
/// wait channel from `/proc`, then its user-space stack from `eu-stack`
/// (elfutils, installed by `.ci/apt-packages.txt`; skipped where missing),
/// given at most 30 s.
fn thread_stacks(pid: libc::pid_t) -> String {
    let mut report =
        format!("\n--- the run hung: its threads, stopped at the limit (pid {pid}) ---\n");
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(path).map_or_else(|e| format!("({e})"), |s| s.trim().to_owned())
    };
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let dir = task.path();
            report += &format!(
                "thread {}: {} waiting in {}\n",
                task.file_name().to_string_lossy(),
                read(dir.join("comm")),
                read(dir.join("wchan"))
            );
        }
    }
    let mut stack = Command::new("timeout");
    stack.args(["30", "eu-stack", "-p", &pid.to_string()]);
    match stack.stdin(Stdio::null()).output() {
        Ok(out) => {
            report += &String::from_utf8_lossy(&out.stdout);
            report += &String::from_utf8_lossy(&out.stderr);
        }
        Err(e) => report += &format!("(no eu-stack: {e})\n"),
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program killed at its limit is reported as timed out, with each
    /// of its threads and where it waited.
    #[test]
    fn a_hung_run_reports_its_threads() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let out = run(cmd, Duration::from_millis(300)).unwrap();
        assert_eq!(out.exit, None);
        assert!(out.elapsed < Duration::from_secs(30), "{:?}", out.elapsed);
        assert!(
            out.stderr.contains("the run hung") && out.stderr.contains(": sleep waiting in "),
            "{}",
            out.stderr
        );
    }
}
