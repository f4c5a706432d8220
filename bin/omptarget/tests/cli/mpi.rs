//! `omptarget run --mpi N` and `info` in an MPI job: servers started, reports kept, statuses passed on, no process of the job left behind.

use super::*;

/// SIGTERM to `omptarget run --mpi 2` ends the whole job: `mpirun`, the
/// program and both servers are gone when `run` returns, and `run`
/// returns `mpirun`'s status (it did not die of the signal itself).
#[test]
fn sigterm_to_run_mpi_leaves_no_process_of_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let mut tool = Command::new(OMPTARGET)
        .current_dir(dir.path())
        .args(["run", "--mpi", "2", "--", "sh", "-c"])
        .arg("echo $$ > pid.new; mv pid.new pid; exec sleep 600")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let program: i32 = wait_for_file(&mut tool, &dir.path().join("pid"))
        .trim()
        .parse()
        .unwrap();
    let program = process(program).expect("the program runs");
    // mpirun, and its three ranks: the program's (which runs the program)
    // and two servers.
    let job = loop {
        let mpirun = children_of(tool.id());
        let ranks: Vec<_> = mpirun
            .iter()
            .flat_map(|&(pid, _)| children_of(pid as u32))
            .collect();
        if mpirun.len() == 1 && ranks.len() == 3 {
            break [mpirun, ranks, vec![program]].concat();
        }
        if let Some(status) = tool.try_wait().unwrap() {
            panic!("omptarget ended before the job started: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SAFETY: signals our own child process.
    assert_eq!(unsafe { libc::kill(tool.id() as i32, libc::SIGTERM) }, 0);
    let out = tool.wait_with_output().unwrap();
    let left: Vec<_> = job.iter().copied().filter(|&p| still_running(p)).collect();
    assert_job_ended_and_failed(left, &out);
}

/// Running processes whose environment holds `OMPTARGET_TEST_JOB=tag`:
/// everything a job started with it in its environment (`mpirun`, every
/// rank, the program) still running.
pub(crate) fn processes_of_job(tag: &str) -> Vec<(i32, u64)> {
    let marker = format!("OMPTARGET_TEST_JOB={tag}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|v| v == marker.as_bytes())
                .then_some(())?;
            process(pid)
        })
        .collect()
}

/// A program that never starts the offload runtime (so never joins the
/// MPI job the servers wait in) ends its `run --mpi N` job with its own
/// status, and nothing of the job is left running: the program's rank
/// joins in its place once it ended. (Without that, the servers wait in
/// `MPI_Init_thread` for ever; a job still running after `JOB_LIMIT` is
/// ended and the test fails.)
#[test]
fn run_mpi_of_a_program_that_never_offloads_ends_with_its_status() {
    const JOB_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], i32); 2] =
        [("1", &["/bin/true"], 0), ("2", &["sh", "-c", "exit 3"], 3)];
    for (servers, program, code) in cases {
        let tag = format!("never-offloads-{}-{servers}", std::process::id());
        let mut tool = Command::new(OMPTARGET)
            .current_dir(dir.path())
            .args(["run", "--mpi", servers, "--"])
            .args(program)
            .env("OMPTARGET_TEST_JOB", &tag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = tool.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > JOB_LIMIT {
                // SAFETY: signals our own child process (it ends the job).
                unsafe { libc::kill(tool.id() as i32, libc::SIGTERM) };
                let ended = tool.wait().unwrap();
                panic!("--mpi {servers} -- {program:?} still ran after {JOB_LIMIT:?} ({ended:?})");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let left = processes_of_job(&tag);
        kill_left(&left);
        assert!(left.is_empty(), "{program:?}: left running: {left:?}");
        assert_eq!(status.code(), Some(code), "--mpi {servers} -- {program:?}");
    }
}

/// The program's rank killed by SIGKILL (as `mpirun` ends a rank that
/// outlives its SIGTERM) takes the program with it: nothing of the job is
/// left running, and `run` fails.
#[test]
fn a_killed_program_rank_takes_the_program_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("rank-killed-{}", std::process::id());
    let mut tool = Command::new(OMPTARGET)
        .current_dir(dir.path())
        .args(["run", "--mpi", "1", "--", "sh", "-c"])
        .arg("echo $$ > pid.new; mv pid.new pid; exec sleep 600")
        .env("OMPTARGET_TEST_JOB", &tag)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let program: i32 = wait_for_file(&mut tool, &dir.path().join("pid"))
        .trim()
        .parse()
        .unwrap();
    let rank = std::fs::read_to_string(format!("/proc/{program}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 1..];
            rest.split_whitespace().nth(1)?.parse::<i32>().ok()
        })
        .expect("the program's parent");
    let cmdline = std::fs::read(format!("/proc/{rank}/cmdline")).unwrap();
    assert!(
        cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == b"mpi-program-rank"),
        "the program's parent is not the program's rank: {}",
        text(&cmdline)
    );
    // SAFETY: a process of our own test's job.
    assert_eq!(unsafe { libc::kill(rank, libc::SIGKILL) }, 0);
    let out = tool.wait_with_output().unwrap();
    assert_job_ended_and_failed(processes_of_job(&tag), &out);
}

/// Nothing of the job is `left` (killed if anything is, so that a failure
/// leaves no process behind), and `run` failed.
pub(crate) fn assert_job_ended_and_failed(left: Vec<(i32, u64)>, out: &std::process::Output) {
    kill_left(&left);
    assert!(left.is_empty(), "left running: {left:?} ({:?})", out.status);
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
}

/// SIGKILL what a failed test left running.
pub(crate) fn kill_left(left: &[(i32, u64)]) {
    for &(pid, _) in left {
        // SAFETY: our own test's processes, left behind by the failure.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// A server count the machine cannot start is refused before `mpirun`
/// tries (it would spend minutes on it), saying the bound and why.
#[test]
fn run_mpi_refuses_a_count_the_machine_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "100000", "--", "/bin/true"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("omptarget: error: --mpi 100000: this machine can start at most ")
            && stderr.contains(" device servers (")
            && stderr.contains(" per "),
        "{stderr}"
    );
}

/// `ffi/plugin/mpi/tests/c/job.c` (one program rank of an MPI job) built
/// by clang-14.
pub(crate) fn mpi_job_program(dir: &Path) -> PathBuf {
    let out = dir.join("job");
    let status = Command::new("clang-14")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1"])
        .arg(repo().join("ffi/plugin/mpi/tests/c/job.c"))
        .args(["-lpthread", "-o"])
        .arg(&out)
        .status()
        .expect("clang-14 (cargo xtask deps installs it)");
    assert!(status.success());
    out
}

/// `omptarget run --mpi 2`: the program and two device servers (4 host
/// devices each) in one mpirun job. Every device computes; the program's
/// status, the shutdown reports (the program's and each server's, with
/// its rank), the leak report and the profile (one file per rank) all
/// come through.
#[test]
fn run_mpi_starts_the_servers_and_keeps_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let program = mpi_job_program(dir.path());
    let profile = dir.path().join("trace.json");
    let out = omptarget(
        dir.path(),
        &[
            "run",
            "--mpi",
            "2",
            "--report",
            "--leak-report",
            "--profile",
            profile.to_str().unwrap(),
            "--",
            program.to_str().unwrap(),
            "count",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // 4 local devices, then 2 x 4 remote ones; each sums 0..4096 % 7.
    let mut expected = String::from("devices: 12\n");
    for d in 0..12 {
        expected += &format!("device {d}: 12285\n");
    }
    assert_eq!(stdout, expected, "{stderr}");
    for rank in [1, 2] {
        assert!(
            stderr.contains(&format!("omptarget-mpi-device rank {rank} on ")),
            "rank {rank}'s shutdown report: {stderr}"
        );
        let server_profile = dir.path().join(format!("trace.json.rank{rank}"));
        assert!(server_profile.is_file(), "rank {rank}'s profile: {stderr}");
    }
    assert!(profile.is_file(), "the program's profile: {stderr}");
    // The program's report names each remote device's rank: devices 4-7
    // are rank 1's, 8-11 rank 2's.
    for (device, rank) in [(4, 1), (7, 1), (8, 2), (11, 2)] {
        let step = format!(
            "deinit device          device {device} (libomptarget.rtl.mpi.so at rank {rank} on "
        );
        assert!(stderr.contains(&step), "{step}: {stderr}");
    }
    assert!(
        stderr.contains("omptarget leak report: no leaks"),
        "{stderr}"
    );
}

/// The program's exit status passes through mpirun and the tool: `exit(4)`
/// after offloading to a remote device.
#[test]
fn run_mpi_returns_the_programs_status() {
    let dir = tempfile::tempdir().unwrap();
    let program = mpi_job_program(dir.path());
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "1", "--", program.to_str().unwrap(), "exit"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "last device: 12285\n");
}

/// `omptarget info` in an MPI job lists each remote device after the local
/// ones, with the rank and host that serve it.
#[test]
fn info_in_an_mpi_job_lists_remote_devices_with_rank_and_host() {
    let dir = tempfile::tempdir().unwrap();
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "1", "--", OMPTARGET, "info"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let devices: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  device "))
        .collect();
    assert_eq!(devices.len(), 8, "{stdout}");
    for (id, line) in devices.iter().enumerate() {
        let plugin = if id < 4 { "x86_64" } else { "mpi" };
        let head = format!(
            "  device {id}: libomptarget.rtl.{plugin}.so device {} (",
            id % 4
        );
        assert!(line.starts_with(&head), "{line}");
        if id >= 4 {
            assert!(
                line.contains("(rank 1 on ") && line.contains(&format!(", device {} of ", id - 4)),
                "{line}"
            );
        }
    }
}

/// `ffi/plugin/mpi/tests/c/mpi_program.c`, an MPI program (Open MPI's
/// `mpicc` flags), built by clang-14 into `dir`.
fn mpi_program(dir: &Path) -> PathBuf {
    let out = dir.join("mpi_program");
    let flags = |which: &str| -> Vec<String> {
        let shown = Command::new("mpicc.openmpi")
            .arg(which)
            .output()
            .expect("mpicc.openmpi (cargo xtask deps installs it)");
        String::from_utf8_lossy(&shown.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let status = Command::new("clang-14")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1"])
        .args(flags("--showme:compile"))
        .arg(repo().join("ffi/plugin/mpi/tests/c/mpi_program.c"))
        .arg("-o")
        .arg(&out)
        .args(flags("--showme:link"))
        .status()
        .expect("clang-14 (cargo xtask deps installs it)");
    assert!(status.success());
    out
}

/// `omptarget run --mpi 1 --ranks 2 -- ./mpi_program`: the program links
/// Open MPI, so each of its ranks spawns a server of its own; its
/// `MPI_Init`, collectives and ring on `MPI_COMM_WORLD` see its 2 ranks
/// only, every device computes, and each server's report is kept.
#[test]
fn run_mpi_gives_an_mpi_program_servers_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let program = mpi_program(dir.path());
    let out = omptarget(
        dir.path(),
        &[
            "run",
            "--mpi",
            "1",
            "--ranks",
            "2",
            "--report",
            "--",
            program.to_str().unwrap(),
            "init-first",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "rank 0 of 2: devices 8, sums 98280 98280, world sum 2, ring from 1",
            "rank 1 of 2: devices 8, sums 98280 98280, world sum 2, ring from 0"
        ],
        "{stderr}"
    );
    let summaries = stderr
        .lines()
        .filter(|l| l.starts_with("omptarget-mpi-device rank 1 on "))
        .count();
    assert_eq!(summaries, 2, "one server per program rank: {stderr}");
}

/// `--ranks` asks for program ranks of their own servers: with servers
/// sharing the program's job (a program that does not link MPI, no
/// `--spawn`) it is refused, saying why.
#[test]
fn ranks_without_spawned_servers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "1", "--ranks", "2", "--", "/bin/true"],
        &[],
    );
    // The tool's own errors end it with 2.
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--ranks needs --spawn"),
        "{}",
        text(&out.stderr)
    );
}
