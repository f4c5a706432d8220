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
