//! A device server that lives but does not answer (stopped with SIGSTOP,
//! as a hung node or a debugger leaves it) is a bounded error that names
//! it, after `OMPTARGET_MPI_TIMEOUT` seconds; a kernel that runs longer
//! than that is not silence (the server's responder thread answers the
//! probes meanwhile). Plain `mpirun`: the job ends once the program fails,
//! and Open MPI kills the stopped server with it.
use crate::faults::server_with_rank;
use crate::job;
use crate::lifecycle::{self, assert_no_server_left, describe, tag};
use omptarget_test_support::exec::Exit;
use std::time::{Duration, Instant};

/// The limit the tests set, in seconds.
const LIMIT: &str = "2";

fn signal(pid: i32, signal: i32) {
    // SAFETY: a plain syscall; `pid` is a process of the test's own job.
    unsafe { libc::kill(pid, signal) };
}

#[test]
fn a_stopped_server_fails_the_next_region_within_the_limit_and_is_named() {
    let tag = tag("stopped-server");
    let dir = tempfile::tempdir().unwrap();
    let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
    let cmd = lifecycle::job_with(
        job::Launch::new(job::Family::OpenMpi).env("OMPTARGET_MPI_TIMEOUT", LIMIT),
        lifecycle::program(),
        &["wait", &ready.to_string_lossy(), &go.to_string_lossy()],
        1,
        2,
        &tag,
    );
    let running = std::thread::spawn(move || job::run(cmd));
    if job::wait_for_file(&dir.path().join("ready.0"), &running).is_none() {
        panic!(
            "the job ended before it was ready: {}",
            describe(&running.join().unwrap())
        );
    }
    let stopped = server_with_rank(&tag, 2);
    signal(stopped, libc::SIGSTOP);
    let start = Instant::now();
    // Device 8: the stopped server's first.
    job::write_whole(&dir.path().join("go.0"), "8\n");
    let out = running.join().unwrap();
    let took = start.elapsed();
    // Whatever happened, nothing of the job stays stopped behind.
    for pid in job::running_servers(&tag) {
        signal(pid, libc::SIGKILL);
    }
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    assert_ne!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(
        took < Duration::from_secs(30),
        "took {took:?}: {}",
        describe(&out)
    );
    assert!(!out.stdout.contains("after:"), "{}", describe(&out));
    for said in [
        "device server rank 2 on ",
        &format!("did not answer for {LIMIT} s"),
        "Libomptarget fatal error 1: failure of target construct while offloading is mandatory",
    ] {
        assert!(out.stderr.contains(said), "no {said:?}: {}", describe(&out));
    }
    assert_no_server_left(&tag, Duration::from_secs(5));
}

/// The kernel sleeps 5 s under a limit of 2 s: the first probe goes
/// 1.25 s into the wait, so a server whose responder did not answer would
/// be given up on at 3.25 s, before the kernel ends. (A limit of 1 s made
/// the test fail whenever the responder thread waited a whole second for a
/// core on a loaded machine.)
#[test]
fn a_kernel_that_runs_longer_than_the_limit_is_not_silence() {
    let tag = tag("slow-kernel");
    let cmd = lifecycle::job_with(
        job::Launch::new(job::Family::OpenMpi).env("OMPTARGET_MPI_TIMEOUT", LIMIT),
        lifecycle::program(),
        &["slow-kernel"],
        1,
        1,
        &tag,
    );
    let out = job::run(cmd);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        "slow kernel done, then: 12285\n",
        "{}",
        describe(&out)
    );
    assert!(!out.stderr.contains("did not answer"), "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}

#[test]
fn a_bad_limit_is_a_clear_error_and_the_local_devices_still_work() {
    let tag = tag("bad-limit");
    let cmd = lifecycle::job_with(
        job::Launch::new(job::Family::OpenMpi).env("OMPTARGET_MPI_TIMEOUT", "soon"),
        lifecycle::program(),
        &["count"],
        1,
        1,
        &tag,
    );
    let out = job::run(cmd);
    // The program rank still joined and told its server it is done: the
    // job ends, with the program's status.
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(
        out.stderr
            .contains("OMPTARGET_MPI_TIMEOUT=\"soon\": expected whole seconds"),
        "{}",
        describe(&out)
    );
    assert!(out.stdout.starts_with("devices: 4\n"), "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(5));
}
