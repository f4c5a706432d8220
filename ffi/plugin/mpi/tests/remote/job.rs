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

/// `mpirun`, allowed to run as root (CI does), oversubscribing this
/// machine's cores, with a clean offload environment.
pub fn mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
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

/// The rank (`OMPI_COMM_WORLD_RANK`) of the MPI process `pid`.
pub fn rank_of(pid: i32) -> Option<i32> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|b| *b == 0).find_map(|v| {
        std::str::from_utf8(v.strip_prefix(b"OMPI_COMM_WORLD_RANK=")?)
            .ok()?
            .parse()
            .ok()
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
    let mut cmd = mpirun();
    let mut vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    vars.push(format!("LD_LIBRARY_PATH={lib_path}"));
    vars.push(format!("OMPTARGET_PLUGINS={}", mpi_plugin().display()));
    // `-x` belongs to the context it is written in (MPMD).
    for var in &vars {
        cmd.args(["-x", var]);
    }
    cmd.args(["-np", "1"]).arg(program).args(args);
    // The servers load the program's device images, which need the
    // program's libraries (clang 19/22 images link libomptarget.so.NN).
    cmd.args([
        ":",
        "-x",
        &format!("OMPTARGET_HOST_DEVICES={server_devices}"),
        "-x",
        &format!("LD_LIBRARY_PATH={lib_path}"),
    ]);
    cmd.args(["-np", &servers.to_string()]).arg(server());
    cmd
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
