//! Copies between two servers' devices (`omp_target_memcpy` from a
//! device of one server to a device of another).
use crate::job::{self, Family, Launch};
use crate::lifecycle::{describe, lib_path, program};
use omptarget_test_support::exec::Exit;
use std::process::Command;
use std::time::{Duration, Instant};

/// `ranks` program ranks of `tests/c/job.c MODE`, loading only the MPI
/// plugin, and two servers of one host device each: device 0 is the first
/// server's, the last device the second's.
fn two_servers(ranks: usize, mode: &str) -> Command {
    Launch::new(Family::OpenMpi)
        .env("LD_LIBRARY_PATH", &lib_path())
        .env(
            "OMPTARGET_PLUGINS",
            &job::mpi_plugin().display().to_string(),
        )
        .context(ranks, program(), &[mode.to_owned()])
        .then()
        .env("OMPTARGET_HOST_DEVICES", "1")
        .env("LD_LIBRARY_PATH", &lib_path())
        .context(2, &job::server(), &[])
        .command()
}

/// Two program ranks copy 8 MiB between the same two servers 50 times at
/// once, in opposite directions (`tests/c/job.c crossing`). Each server
/// serves one request at a time: asked straight to send to each other,
/// the two servers would each wait in its send for the other for ever (it
/// did in 2 of 4 runs of 20 copies); relayed through the program ranks,
/// every copy arrives whole.
#[test]
fn crossing_copies_of_two_program_ranks_between_two_servers_finish() {
    for _ in 0..2 {
        let out = job::run(two_servers(2, "crossing"));
        assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
        assert_eq!(
            job::sorted_lines(&out.stdout),
            ["rank 0: crossing copies: ok", "rank 1: crossing copies: ok"],
            "{}",
            describe(&out)
        );
    }
}

/// A kernel calls `exit(9)` on the last server while another thread copies
/// from the first server's device to the last one's in a loop, straight
/// from server to server (`tests/c/job.c exit-during-exchange`). The
/// exiting server refuses every request but still takes the bytes of a
/// copy queued behind the kernel, so the other server is not left waiting
/// in its send (which held the job until the silence limit, 60 s), and
/// the job ends promptly with the kernel's status.
#[test]
fn exit_in_a_kernel_while_copies_between_servers_run_ends_the_job_promptly() {
    let start = Instant::now();
    let out = job::run(two_servers(1, "exit-during-exchange"));
    let took = start.elapsed();
    assert_eq!(out.exit, Some(Exit::Code(9)), "{}", describe(&out));
    assert!(
        took < Duration::from_secs(30),
        "took {took:?}: {}",
        describe(&out)
    );
}
