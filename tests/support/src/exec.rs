//! The C suites' runner: a built program under one runtime, with the clean
//! offload environment ([`crate::run::clean_offload_env`]), a hang limit
//! that is reported (the run's [`RunOutput::exit`] is `None`) rather than
//! panicked on, its own process group, and its output captured.

use std::fmt;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    crate::run::clean_offload_env(&mut cmd);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.env("LD_LIBRARY_PATH", lib_dir.as_ref());
    cmd
}

/// Runs `cmd` to completion or until `timeout`, then kills its whole process
/// group. stdin is empty; stdout and stderr are captured (lossy UTF-8).
pub fn run(mut cmd: Command, timeout: Duration) -> std::io::Result<RunOutput> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
    let mut stdout_pipe = child.stdout.take().expect("stdout is piped");
    let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
    let stdout_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout_pipe.read_to_end(&mut buf);
        buf
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut buf);
        buf
    });
    let pid = child.id() as libc::pid_t;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            // SAFETY: plain syscall on the process group created above; the
            // child is not reaped yet, so the id still names that group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    // The group is killed only while the child is unreaped (its id cannot be
    // reused then); the programs start no background processes, so the pipes
    // close when the child exits.
    let stdout = stdout_reader.join().unwrap_or_default();
    let stderr = stderr_reader.join().unwrap_or_default();
    let exit = status.map(|s| match (s.code(), s.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    });
    Ok(RunOutput {
        exit,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed,
    })
}
