//! Servers each program rank spawns for itself (`OMPTARGET_MPI_SPAWN=N`,
//! `MPI_Comm_spawn`): the program's `MPI_COMM_WORLD` holds its own ranks
//! only, and an MPI program keeps its own MPI. The programs are
//! `tests/c/job.c` (no MPI of its own) and `tests/c/mpi_program.c` (MPI
//! programs as users write them).
use crate::job;
use crate::lifecycle::{assert_no_server_left, build_source, describe, lib_path, program, tag};
use omptarget_test_support::exec::Exit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

fn mpi_program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/mpi_program.c");
        build_source(&source, "mpi_program", true, &[])
    })
}

/// `mpirun -np ranks BINARY ARGS`, each rank spawning `servers` servers
/// (marked with `tag`, each printing its shutdown report on stderr).
fn spawning(ranks: usize, servers: usize, tag: &str, binary: &Path, args: &[&str]) -> Command {
    spawning_with(ranks, servers, tag, binary, args, &[])
}

/// [`spawning`], with `extra` variables passed on to every rank.
fn spawning_with(
    ranks: usize,
    servers: usize,
    tag: &str,
    binary: &Path,
    args: &[&str],
    extra: &[(&str, &str)],
) -> Command {
    let mut cmd = job::mpirun();
    let own = [
        ("LD_LIBRARY_PATH", lib_path()),
        ("OMPTARGET_MPI_SPAWN", servers.to_string()),
        ("OMPTARGET_TEST_JOB", tag.to_owned()),
        ("OMPTARGET_SHUTDOWN_REPORT", "stderr".to_owned()),
    ];
    let extra = extra.iter().map(|&(name, value)| (name, value.to_owned()));
    for (name, value) in own.into_iter().chain(extra) {
        cmd.args(["-x", &format!("{name}={value}")]);
    }
    cmd.args(["-np", &ranks.to_string()]).arg(binary).args(args);
    cmd
}

/// Each server's one-line summary, as it acknowledges its exit.
fn server_summaries(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| {
            l.starts_with("omptarget-mpi-device rank ") && l.contains("request(s) answered")
        })
        .count()
}

#[test]
fn a_program_alone_spawns_its_servers_without_a_launcher() {
    let tag = tag("spawn-alone");
    let mut cmd = Command::new(program());
    omptarget_test_support::run::clean_offload_env(&mut cmd);
    cmd.arg("count")
        .env("LD_LIBRARY_PATH", lib_path())
        .env("OMPTARGET_MPI_SPAWN", "2")
        .env("OMPTARGET_TEST_JOB", &tag)
        .env("OMPTARGET_SHUTDOWN_REPORT", "stderr")
        // A singleton's servers need slots beyond this machine's cores.
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let mut expected = String::from("devices: 12\n");
    for d in 0..12 {
        expected.push_str(&format!("device {d}: 12285\n"));
    }
    assert_eq!(out.stdout, expected, "{}", describe(&out));
    assert_eq!(server_summaries(&out.stderr), 2, "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// What each rank of `mpi_program.c` prints when all went well.
fn agreed(rank: usize, ranks: usize, servers: usize, thread_level: bool) -> String {
    let devices = 4 + 4 * servers;
    let sum = 12285 * devices;
    format!(
        "rank {rank} of {ranks}: devices {devices}, sums {sum} {sum}, world sum {ranks}, ring from {}{}",
        (rank + ranks - 1) % ranks,
        if thread_level { ", thread level ok" } else { "" }
    )
}

#[test]
fn an_mpi_program_that_calls_mpi_init_keeps_a_world_of_its_own_ranks() {
    let tag = tag("spawn-init-first");
    let out = job::run(spawning(3, 1, &tag, mpi_program(), &["init-first"]));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let expected: Vec<String> = (0..3).map(|r| agreed(r, 3, 1, false)).collect();
    assert_eq!(
        job::sorted_lines(&out.stdout),
        expected,
        "{}",
        describe(&out)
    );
    // Each rank's own server, told to exit when its rank finalised MPI.
    assert_eq!(server_summaries(&out.stderr), 3, "{}", describe(&out));
    assert!(!out.stderr.contains("error"), "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}

#[test]
fn an_mpi_program_may_offload_before_it_initialises_mpi() {
    let tag = tag("spawn-offload-first");
    let out = job::run(spawning(2, 2, &tag, mpi_program(), &["offload-first"]));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let expected: Vec<String> = (0..2).map(|r| agreed(r, 2, 2, true)).collect();
    assert_eq!(
        job::sorted_lines(&out.stdout),
        expected,
        "{}",
        describe(&out)
    );
    assert_eq!(server_summaries(&out.stderr), 4, "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}

#[test]
fn offloading_to_a_remote_device_after_mpi_finalize_is_a_clear_error() {
    let tag = tag("spawn-finalized");
    let out = job::run(spawning(
        1,
        1,
        &tag,
        mpi_program(),
        &["finalize-then-offload"],
    ));
    assert_ne!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(
        out.stdout.starts_with(&agreed(0, 1, 1, false)),
        "{}",
        describe(&out)
    );
    assert!(
        !out.stdout.contains("after MPI_Finalize"),
        "{}",
        describe(&out)
    );
    assert!(
        out.stderr
            .contains("the remote devices are gone: the program called MPI_Finalize"),
        "{}",
        describe(&out)
    );
    assert!(
        out.stderr
            .contains("failure of target construct while offloading is mandatory"),
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(5));
}

#[test]
fn a_bad_spawn_count_is_a_clear_error_and_the_local_devices_still_work() {
    let mut cmd = Command::new(program());
    omptarget_test_support::run::clean_offload_env(&mut cmd);
    cmd.arg("count")
        .env("LD_LIBRARY_PATH", lib_path())
        .env("OMPTARGET_MPI_SPAWN", "lots");
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(out.stdout.starts_with("devices: 4\n"), "{}", describe(&out));
    assert!(
        out.stderr.contains(
            "OMPTARGET_MPI_SPAWN=\"lots\": expected the number of device servers to spawn"
        ),
        "{}",
        describe(&out)
    );
}

/// More servers than the machine has slots (no oversubscription): the
/// spawn fails with a clear error, and MPI, which the plugin initialised
/// for it, stays the program's: its own `MPI_Init`, collectives and
/// `MPI_Finalize` work, on the local devices. (A singleton: under
/// `mpirun`, Open MPI 4.1's `mpirun` itself waits for ever after a failed
/// spawn, docs/mpi.md.)
#[test]
fn a_failed_spawn_leaves_mpi_to_the_program_and_its_local_devices() {
    let too_many = std::thread::available_parallelism().map_or(64, |n| n.get() + 1);
    let mut cmd = Command::new(mpi_program());
    omptarget_test_support::run::clean_offload_env(&mut cmd);
    cmd.arg("init-first")
        .env("LD_LIBRARY_PATH", lib_path())
        .env("OMPTARGET_MPI_SPAWN", too_many.to_string())
        .env_remove("OMPI_MCA_rmaps_base_oversubscribe");
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        "rank 0 of 1: devices 4, sums 49140 49140, world sum 1, ring from 0\n",
        "{}",
        describe(&out)
    );
    assert!(
        out.stderr
            .contains(&format!("could not start {too_many} device server(s)"))
            && out.stderr.contains("no remote devices"),
        "{}",
        describe(&out)
    );
}

/// `exit(6)` inside a region on a spawned server's device ends the
/// program with status 6, as on a local device; every server (the one
/// that ran the kernel, and its sibling) leaves, none is left behind.
#[test]
fn exit_inside_a_kernel_on_a_spawned_server_is_the_programs_exit() {
    let tag = tag("spawn-kernel-exit");
    let out = job::run(spawning(1, 2, &tag, program(), &["exit-in-kernel"]));
    assert_eq!(out.exit, Some(Exit::Code(6)), "{}", describe(&out));
    assert_eq!(out.stdout, "last device: 12285\n", "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// Initialising with `PMPI_Init`, the profiling name that Fortran
/// bindings and PMPI tools call, works as `MPI_Init` does.
#[test]
fn an_mpi_program_that_calls_pmpi_init_keeps_its_own_mpi() {
    let tag = tag("spawn-pmpi");
    let out = job::run(spawning(2, 1, &tag, mpi_program(), &["pmpi-init"]));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let expected: Vec<String> = (0..2).map(|r| agreed(r, 2, 1, false)).collect();
    assert_eq!(
        job::sorted_lines(&out.stdout),
        expected,
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// An offload program that an MPI program spawned as its worker has a
/// parent that is not a program rank of ours: its plugin (told by
/// `OMPTARGET_MPI=1` that the job may hold servers) joins its own world,
/// finds no server there, and leaves MPI to the program, which talks to
/// its parent. (It used to merge with that parent and wait for ever.)
#[test]
fn a_worker_that_an_mpi_program_spawned_keeps_its_parent() {
    let mut cmd = job::mpirun();
    cmd.args(["-x", &format!("LD_LIBRARY_PATH={}", lib_path())])
        .args(["-x", "OMPTARGET_MPI=1", "-np", "1"])
        .arg(mpi_program())
        .arg("manager");
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        "manager: the worker has 4 devices, sum 49140\n",
        "{}",
        describe(&out)
    );
}

/// A PMPI tool that interposes `MPI_Init` (preloaded, as mpiP or Darshan
/// are) keeps it: its `MPI_Init` runs, and its `PMPI_Init` is the one the
/// plugin answers.
#[test]
fn a_pmpi_tool_keeps_its_mpi_init() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/pmpi_tool.c");
    let tool = crate::lifecycle::build_shared_mpi(&source, "libpmpi_tool.so");
    let tag = tag("spawn-tool");
    let preload = tool.display().to_string();
    let with_tool = spawning_with(
        1,
        1,
        &tag,
        mpi_program(),
        &["init-first"],
        &[("LD_PRELOAD", &preload)],
    );
    let out = job::run(with_tool);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        format!("tool: MPI_Init intercepted\n{}\n", agreed(0, 1, 1, false)),
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// A program that links MPI but, this run, never calls it, in a job whose
/// plugin initialised MPI and found no server (`OMPTARGET_MPI=1`, no
/// server context): MPI, left to the program, is finalised at its exit,
/// so the launcher sees it end well (it said "exited improperly").
#[test]
fn an_mpi_program_that_never_calls_mpi_ends_well() {
    let mut cmd = job::mpirun();
    cmd.args(["-x", &format!("LD_LIBRARY_PATH={}", lib_path())])
        .args(["-x", "OMPTARGET_MPI=1", "-np", "1"])
        .arg(mpi_program())
        .arg("no-mpi");
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        "no MPI: devices 4, sum 49140\n",
        "{}",
        describe(&out)
    );
}

/// A non-PIE program that takes `MPI_Init`'s address has a canonical PLT
/// entry for it, which `dlsym` answers with: not a tool's `MPI_Init`, so
/// the program's call is still answered by the plugin.
#[test]
fn a_non_pie_program_that_takes_mpi_init_s_address_keeps_its_own_mpi() {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let program = BUILT.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/mpi_program.c");
        build_source(&source, "mpi_program_nopie", true, &["-fno-pic", "-no-pie"])
    });
    let tag = tag("spawn-nopie");
    let out = job::run(spawning(1, 1, &tag, program, &["init-first"]));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        job::sorted_lines(&out.stdout),
        [agreed(0, 1, 1, false)],
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// A spawned server stopped (SIGSTOP) while the program still runs: the
/// program's next call on it fails within the limit (an allocation it
/// handles: NULL), the program finalises MPI and ends, and the rank that
/// spawned the server ends it, so that the job ends too (the launcher
/// waited for the stopped server for ever).
#[test]
fn a_silent_spawned_server_is_ended_with_its_program() {
    let tag = tag("spawn-silent");
    let dir = tempfile::tempdir().unwrap();
    let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
    let ordered = spawning_with(
        1,
        1,
        &tag,
        mpi_program(),
        &[
            "silent-then-finalize",
            &ready.to_string_lossy(),
            &go.to_string_lossy(),
        ],
        &[("OMPTARGET_MPI_TIMEOUT", "2")],
    );
    let running = std::thread::spawn(move || job::run(ordered));
    if job::wait_for_file(&ready, &running).is_none() {
        panic!(
            "the job ended before it was ready: {}",
            describe(&running.join().unwrap())
        );
    }
    let servers = job::running_servers(&tag);
    assert_eq!(servers.len(), 1, "{servers:?}");
    // SAFETY: a plain syscall to the job's own server.
    unsafe { libc::kill(servers[0], libc::SIGSTOP) };
    job::write_whole(&go, "go\n");
    let out = running.join().unwrap();
    for pid in job::running_servers(&tag) {
        // SAFETY: as above; whatever happened, nothing stays stopped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    assert!(out.stdout.contains("alloc: failed\n"), "{}", describe(&out));
    for said in [
        "did not answer for 2 s",
        "ended (SIGKILL): it stayed silent",
    ] {
        assert!(out.stderr.contains(said), "no {said:?}: {}", describe(&out));
    }
    assert_no_server_left(&tag, Duration::from_secs(5));
}
