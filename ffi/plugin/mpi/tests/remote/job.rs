//! Starting MPI jobs: the helpers every module uses.
use omptarget_test_support::exec::{self, RunOutput};
use omptarget_test_support::stage;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long one job may take before it counts as hung.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(90);

/// The staged device server.
pub fn server() -> PathBuf {
    let staged = stage::staged();
    let server = staged.lib_dir.join("../bin/omptarget-mpi-device");
    assert!(
        server.is_file(),
        "{} is not staged (cargo xtask stage)",
        server.display()
    );
    server
}

/// The staged MPI plugin.
pub fn mpi_plugin() -> PathBuf {
    stage::staged().lib_dir.join("libomptarget.rtl.mpi.so")
}

pub use omptarget_plugin_mpi::mpi::Family;

/// A job's command line, written for its family's launcher: Open MPI's
/// `mpirun.openmpi` (`-x K=V` per context) or MPICH's `mpiexec.hydra`
/// (`-env K V` per context). Contexts are separated by `:` (MPMD).
pub struct Launch {
    family: Family,
    cmd: Command,
    contexts: usize,
}

impl Launch {
    /// The family's launcher, as [`mpirun`] sets Open MPI's up. Under
    /// MPICH every rank gets `OMPTARGET_MPI=1`: Hydra tells a process
    /// nothing of the job's contexts (no `OMPI_NUM_APP_CTX`), so the
    /// program rank is told it may have servers (the servers ignore it).
    pub fn new(family: Family) -> Launch {
        let cmd = match family {
            Family::OpenMpi => mpirun_of("mpirun.openmpi"),
            Family::Mpich => {
                let mut cmd = Command::new("mpiexec.hydra");
                omptarget_test_support::run::clean_offload_env(&mut cmd);
                cmd.args(["-genv", "OMPTARGET_MPI", "1"]);
                cmd
            }
        };
        Launch {
            family,
            cmd,
            contexts: 0,
        }
    }

    /// [`Launch::new`], the job surviving the death of a rank (Open MPI:
    /// `--enable-recovery`; Hydra: `-disable-auto-cleanup`).
    pub fn recovering(family: Family) -> Launch {
        let mut launch = Launch::new(family);
        launch.cmd.arg(match family {
            Family::OpenMpi => "--enable-recovery",
            Family::Mpich => "-disable-auto-cleanup",
        });
        launch
    }

    /// Set `name=value` in the context that comes next.
    pub fn env(mut self, name: &str, value: &str) -> Launch {
        match self.family {
            Family::OpenMpi => self.cmd.args(["-x", &format!("{name}={value}")]),
            Family::Mpich => self.cmd.args(["-env", name, value]),
        };
        self
    }

    /// A context of `n` ranks of `program` with `args`; the variables set
    /// since the last one are its own.
    pub fn context(mut self, n: usize, program: &Path, args: &[String]) -> Launch {
        self.cmd
            .args(["-np", &n.to_string()])
            .arg(program)
            .args(args);
        self.contexts += 1;
        self
    }

    /// Start the next context (its variables, then [`Launch::context`]).
    pub fn then(mut self) -> Launch {
        assert!(self.contexts > 0, "a context first");
        self.cmd.arg(":");
        self
    }

    /// The command line.
    pub fn command(self) -> Command {
        self.cmd
    }
}

/// `mpirun`, allowed to run as root (CI does), oversubscribing this
/// machine's cores, with a clean offload environment.
pub fn mpirun() -> Command {
    mpirun_of("mpirun")
}

fn mpirun_of(launcher: &str) -> Command {
    let mut cmd = Command::new(launcher);
    omptarget_test_support::run::clean_offload_env(&mut cmd);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg("--oversubscribe");
    cmd
}

/// [`mpirun`] with `--enable-recovery`: the job survives the death of a
/// rank (by default Open MPI ends the whole job then). Its exit status is
/// 0 whatever its ranks' (Open MPI 4.1): tests check what the ranks said.
pub fn mpirun_recovering() -> Command {
    let mut cmd = mpirun();
    cmd.arg("--enable-recovery");
    cmd
}

/// The rank of the MPI process `pid` (Open MPI's `OMPI_COMM_WORLD_RANK`,
/// Hydra's `PMI_RANK`).
pub fn rank_of(pid: i32) -> Option<i32> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|b| *b == 0).find_map(|v| {
        let value = v
            .strip_prefix(b"OMPI_COMM_WORLD_RANK=")
            .or_else(|| v.strip_prefix(b"PMI_RANK="))?;
        std::str::from_utf8(value).ok()?.parse().ok()
    })
}

/// Kill `pid` with SIGKILL.
pub fn kill(pid: i32) {
    // SAFETY: a plain syscall; `pid` is a process of the test's own job.
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill {pid}: {}", std::io::Error::last_os_error());
}

/// Wait until `path` exists, or `running` ends (then `None`), or
/// [`JOB_TIMEOUT`] passes (a panic).
pub fn wait_for_file<T>(path: &Path, running: &std::thread::JoinHandle<T>) -> Option<String> {
    let start = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return Some(text);
        }
        if running.is_finished() {
            return None;
        }
        assert!(
            start.elapsed() < JOB_TIMEOUT,
            "{} did not appear within {JOB_TIMEOUT:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Write `text` to `path` whole (a reader never sees part of it).
pub fn write_whole(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A job: one rank of `program` (with `env`, passed with `-x`) and
/// `servers` device servers, each serving `server_devices` host devices.
/// The program loads only the MPI plugin, so its devices are all remote.
pub fn remote_only_job(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    lib_path: &str,
    servers: usize,
    server_devices: usize,
) -> Command {
    remote_only_job_under(
        Family::OpenMpi,
        program,
        args,
        env,
        lib_path,
        servers,
        server_devices,
    )
}

/// [`remote_only_job`] under `family`'s launcher.
pub fn remote_only_job_under(
    family: Family,
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    lib_path: &str,
    servers: usize,
    server_devices: usize,
) -> Command {
    let mut launch = Launch::new(family);
    for (k, v) in env {
        launch = launch.env(k, v);
    }
    // Each variable belongs to the context it is written in (MPMD).
    let plugin = mpi_plugin().display().to_string();
    launch = launch
        .env("LD_LIBRARY_PATH", lib_path)
        .env("OMPTARGET_PLUGINS", &plugin)
        .context(1, program, args)
        .then()
        // The servers load the program's device images, which need the
        // program's libraries (clang 19/22 images link libomptarget.so.NN).
        .env("OMPTARGET_HOST_DEVICES", &server_devices.to_string())
        .env("LD_LIBRARY_PATH", lib_path)
        .context(servers, &server(), &[]);
    launch.command()
}

/// Run `cmd` to its end (or [`JOB_TIMEOUT`]).
pub fn run(cmd: Command) -> RunOutput {
    exec::run(cmd, JOB_TIMEOUT).expect("mpirun runs")
}

/// Process ids of running device servers whose environment holds
/// `OMPTARGET_TEST_JOB=tag` (for "none left behind": tests run at once).
pub fn running_servers(tag: &str) -> Vec<i32> {
    let marker = format!("OMPTARGET_TEST_JOB={tag}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let first = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        if !first.ends_with(b"omptarget-mpi-device") {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// The `fact: ` lines a program rank written in Rust printed (libtest's own
/// lines come between them), in order.
pub fn facts(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter_map(|l| l.split_once("fact: ").map(|(_, fact)| fact))
        .collect()
}

/// The lines of `text` (the ranks' output, in whatever order the
/// launcher interleaved them), sorted.
pub fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}
