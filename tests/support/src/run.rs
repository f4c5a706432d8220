//! Running a program the way the C-level tests do: a clean offload
//! environment, the staged `libomptarget.so` first on `LD_LIBRARY_PATH`,
//! and a hang limit ([`Run`], [`Outcome`]), run by the one runner
//! ([`crate::exec::run`]). [`clean_offload_env`], the one environment
//! rule, is the runner's (re-exported here).

use crate::scratch::Scratch;
use crate::stage::staged;
use crate::TestPlugin;
use std::fmt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// The default hang limit of one program run; every run has one.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

pub use crate::exec::{clean_offload_env, SCRUBBED, SCRUBBED_PREFIXES};

/// One program run to set up.
pub struct Run {
    cmd: Command,
    timeout: Duration,
}

impl Run {
    /// Run `program` from `scratch` with the staged shim on
    /// `LD_LIBRARY_PATH` and no inherited offload settings.
    pub fn new(scratch: &Scratch, program: &Path) -> Self {
        let mut cmd = Command::new(program);
        clean_offload_env(&mut cmd);
        cmd.current_dir(scratch.path())
            .env("LD_LIBRARY_PATH", &staged().lib_dir)
            .stdin(Stdio::null());
        Run {
            cmd,
            timeout: RUN_TIMEOUT,
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
    /// deadlock), through the one runner ([`crate::exec::run`]).
    pub fn run(self) -> Outcome {
        let described = format!("{:?}", self.cmd);
        let out = crate::exec::run(self.cmd, self.timeout)
            .unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
        let Some(status) = out.status else {
            panic!(
                "{described} did not finish within {:?} (hang or deadlock)\nstdout:\n{}\nstderr:\n{}",
                self.timeout, out.stdout, out.stderr
            );
        };
        Outcome {
            described,
            status,
            stdout: out.stdout,
            stderr: out.stderr,
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
