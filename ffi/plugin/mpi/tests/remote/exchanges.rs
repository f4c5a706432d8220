//! Copies between two servers' devices (`omp_target_memcpy` from a
//! device of one server to a device of another).
use crate::job::{self, Family, Launch};
use crate::lifecycle::{describe, lib_path, program};
use omptarget_test_support::exec::Exit;

/// Two program ranks copy 8 MiB between the same two servers 50 times at
/// once, in opposite directions (`tests/c/job.c crossing`). Each server
/// serves one request at a time: asked straight to send to each other,
/// the two servers would each wait in its send for the other for ever (it
/// did in 2 of 4 runs of 20 copies); relayed through the program ranks,
/// every copy arrives whole.
#[test]
fn crossing_copies_of_two_program_ranks_between_two_servers_finish() {
    let plugin = job::mpi_plugin().display().to_string();
    for _ in 0..2 {
        let cmd = Launch::new(Family::OpenMpi)
            .env("LD_LIBRARY_PATH", &lib_path())
            .env("OMPTARGET_PLUGINS", &plugin)
            .context(2, program(), &["crossing".into()])
            .then()
            .env("OMPTARGET_HOST_DEVICES", "1")
            .env("LD_LIBRARY_PATH", &lib_path())
            .context(2, &job::server(), &[])
            .command();
        let out = job::run(cmd);
        assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
        assert_eq!(
            job::sorted_lines(&out.stdout),
            ["rank 0: crossing copies: ok", "rank 1: crossing copies: ok"],
            "{}",
            describe(&out)
        );
    }
}
