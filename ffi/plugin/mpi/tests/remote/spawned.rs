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
    let mut cmd = job::mpirun();
    for (name, value) in [
        ("LD_LIBRARY_PATH", lib_path()),
        ("OMPTARGET_MPI_SPAWN", servers.to_string()),
        ("OMPTARGET_TEST_JOB", tag.to_owned()),
        ("OMPTARGET_SHUTDOWN_REPORT", "stderr".to_owned()),
    ] {
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

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn an_mpi_program_that_calls_mpi_init_keeps_a_world_of_its_own_ranks() {
    let tag = tag("spawn-init-first");
    let out = job::run(spawning(3, 1, &tag, mpi_program(), &["init-first"]));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let expected: Vec<String> = (0..3).map(|r| agreed(r, 3, 1, false)).collect();
    assert_eq!(sorted_lines(&out.stdout), expected, "{}", describe(&out));
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
    assert_eq!(sorted_lines(&out.stdout), expected, "{}", describe(&out));
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
