//! A device server, or the program, killed with SIGKILL while the job
//! runs under `mpirun --enable-recovery` (with plain `mpirun`, Open MPI
//! ends the whole job when a rank dies by a signal: nothing can wait for
//! the dead rank then, and `lifecycle` checks that case).
//!
//! Under recovery, `mpirun`'s exit status is 0 whatever its ranks' (Open
//! MPI 4.1), so these tests check what the ranks said, and that the job
//! ended well within its hang limit.
//!
//! The C program is `tests/c/job.c`'s `wait` mode: it offloads to every
//! device, writes its pid to a file (`ready.R`, R its rank), waits until
//! the test creates a second file (`go.R`) naming a device, and offloads
//! to that device. Its devices: 4 local host devices, then 4 per server in
//! rank order (the second server's first device is device 8).
use crate::job;
use crate::lifecycle::{self, assert_no_server_left, describe, tag};
use crate::rust_api::{vec_add_library, VecAdd, KERNEL_VAR};
use omptarget::{Config, DeviceBuffer, Image, Kernel, LaunchConfig, Runtime};
use omptarget_test_support::exec::{Exit, RunOutput};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long after the kill a job may take to end before it counts as
/// hung (the liveness check answers within about a quarter of a second).
const BOUNDED: Duration = Duration::from_secs(30);

/// The server of the job marked `tag` with rank `rank`.
pub(crate) fn server_with_rank(tag: &str, rank: i32) -> i32 {
    let servers = job::running_servers(tag);
    servers
        .iter()
        .copied()
        .find(|&pid| job::rank_of(pid) == Some(rank))
        .unwrap_or_else(|| panic!("no server of rank {rank} among {servers:?}"))
}

/// A job of `programs` ranks of `job.c`'s `wait` mode and 2 servers,
/// under `mpirun --enable-recovery`, started on another thread; each
/// program rank's pid once it is ready.
struct WaitingJob {
    dir: tempfile::TempDir,
    running: std::thread::JoinHandle<RunOutput>,
    pids: Vec<i32>,
}

impl WaitingJob {
    fn start(family: job::Family, programs: usize, tag: &str) -> WaitingJob {
        let dir = tempfile::tempdir().unwrap();
        let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
        let cmd = lifecycle::job_with(
            job::Launch::recovering(family),
            lifecycle::program(),
            &["wait", &ready.to_string_lossy(), &go.to_string_lossy()],
            programs,
            2,
            tag,
        );
        let running = std::thread::spawn(move || job::run(cmd));
        let mut pids = Vec::new();
        for rank in 0..programs {
            match job::wait_for_file(&dir.path().join(format!("ready.{rank}")), &running) {
                Some(pid) => pids.push(pid.trim().parse::<i32>().expect("a pid")),
                None => {
                    let out = running.join().unwrap();
                    panic!("the job ended before it was ready: {}", describe(&out));
                }
            }
        }
        WaitingJob { dir, running, pids }
    }

    /// Let program rank `rank` go on, to a region on `device`.
    fn go(&self, rank: usize, device: usize) {
        job::write_whole(
            &self.dir.path().join(format!("go.{rank}")),
            &format!("{device}\n"),
        );
    }

    fn end(self) -> RunOutput {
        self.running.join().unwrap()
    }
}

#[test]
fn a_killed_server_fails_the_next_target_region_through_the_fatal_error_path() {
    killed_server_fails_the_next_target_region(job::Family::OpenMpi);
}

/// Not yet: under `mpiexec.hydra -disable-auto-cleanup` (MPICH 4.0.2)
/// the job still ends when the server is killed ("YOUR APPLICATION
/// TERMINATED WITH THE EXIT STRING: Killed (signal 9)", exit code 9),
/// before the program rank says anything.
#[test]
#[ignore = "Hydra ends the job on a rank's SIGKILL even with -disable-auto-cleanup (docs/mpi.md)"]
fn a_killed_server_fails_the_next_target_region_under_mpich() {
    killed_server_fails_the_next_target_region(job::Family::Mpich);
}

fn killed_server_fails_the_next_target_region(family: job::Family) {
    let tag = tag(&format!("kill-server-{family:?}"));
    let waiting = WaitingJob::start(family, 1, &tag);
    job::kill(server_with_rank(&tag, 2));
    let killed = Instant::now();
    waiting.go(0, 8);
    let out = waiting.end();
    let took = killed.elapsed();
    // mpirun says 0 under recovery: the output tells what happened.
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    assert!(took < BOUNDED, "took {took:?}: {}", describe(&out));
    assert!(out.stdout.contains("ready\n"), "{}", describe(&out));
    assert!(!out.stdout.contains("after:"), "{}", describe(&out));
    for said in [
        "device server rank 2 on",
        "died (its process is gone)",
        "Libomptarget fatal error 1: failure of target construct while offloading is mandatory",
        // The other server noticed the program's abort, and left.
        "omptarget-mpi-device rank 1: program rank 0 on",
    ] {
        assert!(out.stderr.contains(said), "no {said:?}: {}", describe(&out));
    }
    assert_no_server_left(&tag, Duration::from_secs(10));
}

#[test]
fn a_killed_program_leaves_no_server_behind_even_under_recovery() {
    let tag = tag("kill-program");
    let waiting = WaitingJob::start(job::Family::OpenMpi, 1, &tag);
    assert_eq!(job::running_servers(&tag).len(), 2);
    job::kill(waiting.pids[0]);
    assert_no_server_left(&tag, Duration::from_secs(10));
    let out = waiting.end();
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    for rank in [1, 2] {
        let said = format!("omptarget-mpi-device rank {rank}: program rank 0 on");
        assert!(
            out.stderr.contains(&said),
            "no {said:?}: {}",
            describe(&out)
        );
    }
}

#[test]
fn a_server_serves_on_when_one_of_two_program_ranks_is_killed() {
    let tag = tag("kill-one-program");
    // Program ranks 0 and 1, servers 2 and 3.
    let waiting = WaitingJob::start(job::Family::OpenMpi, 2, &tag);
    job::kill(waiting.pids[1]);
    let killed = Instant::now();
    // Rank 0 goes on: a region on the second server's first device.
    waiting.go(0, 8);
    let out = waiting.end();
    let took = killed.elapsed();
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    assert!(took < BOUNDED, "took {took:?}: {}", describe(&out));
    assert!(
        out.stdout.contains("after: device 8: 12285\n"),
        "{}",
        describe(&out)
    );
    for rank in [2, 3] {
        let said = format!("omptarget-mpi-device rank {rank}: program rank 1 on");
        assert!(
            out.stderr.contains(&said),
            "no {said:?}: {}",
            describe(&out)
        );
    }
    assert!(!out.stderr.contains("fatal error"), "{}", describe(&out));
    assert_no_server_left(&tag, Duration::from_secs(10));
}

/// One program rank dies while another keeps offloading to the same
/// server: the server's receive takes a request from any rank, and the
/// death of one must not cost the other its request. `job.c`'s
/// `one-dies` mode times rank 0's copy to come just as the server's
/// liveness check finds rank 1 dead (a receive given up on then took the
/// copy and dropped it: the sum came out 12285, or a request waiting for
/// its reply hung the job).
#[test]
fn a_rank_s_death_costs_another_rank_no_request() {
    let tag = tag("one-dies");
    let cmd = lifecycle::job_with(
        job::Launch::recovering(job::Family::OpenMpi),
        lifecycle::program(),
        &["one-dies"],
        2,
        1,
        &tag,
    );
    let started = Instant::now();
    let out = job::run(cmd);
    assert!(out.exit.is_some(), "hung: {}", describe(&out));
    assert!(started.elapsed() < BOUNDED, "{}", describe(&out));
    assert!(out.stdout.contains("after: 4096\n"), "{}", describe(&out));
    assert!(
        out.stderr
            .contains("omptarget-mpi-device rank 2: program rank 1 on"),
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(10));
}

/// Set in the Rust program rank's environment: the files it writes its
/// pid to, and waits for.
const READY_VAR: &str = "OMPTARGET_TEST_READY";
const GO_VAR: &str = "OMPTARGET_TEST_GO";

/// The program rank of the Rust API test: computes on every remote device,
/// says it is ready, waits while the test kills server rank 2, then
/// computes on every device again. Each `fact: ` line is one fact.
fn run_program_rank() -> anyhow::Result<()> {
    let kernel_library = std::env::var(KERNEL_VAR)?;
    let ready = std::env::var(READY_VAR)?;
    let go = std::env::var(GO_VAR)?;
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([job::mpi_plugin()]) })?;
    let remote: Vec<_> = runtime
        .devices()
        .filter(|d| d.plugin_name() == "libomptarget.rtl.mpi.so")
        .collect();
    println!("fact: remote devices: {}", remote.len());
    let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..1000).map(|i| (2 * i) as f32).collect();
    let right = |c: &[f32]| c.iter().enumerate().all(|(i, v)| *v == (3 * i) as f32);
    let mut ranks = Vec::new();
    let mut images = Vec::new();
    for device in &remote {
        let name = device.properties()?.name.unwrap_or_default();
        // "rank R on HOST, device D of PLUGIN".
        ranks.push(name.split(' ').nth(1).unwrap_or("?").to_owned());
        // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
        images.push(unsafe { Image::load_file(device, &kernel_library, &["vec_add_slices"]) }?);
    }
    let mut work = Vec::new();
    for (device, image) in remote.iter().zip(&images) {
        // SAFETY: `VecAdd` is its signature; it stays below the lengths it
        // is given.
        let add: Kernel<VecAdd> = unsafe { image.kernel("vec_add_slices")? };
        let da = DeviceBuffer::from_slice(device, &a)?;
        let db = DeviceBuffer::from_slice(device, &b)?;
        let dc = DeviceBuffer::<f32>::new(device, a.len())?;
        work.push((add, da, db, dc));
    }
    let mut before = Vec::new();
    for ((add, da, db, dc), rank) in work.iter_mut().zip(&ranks) {
        add.launch(LaunchConfig::default(), (&*da, &*db, &mut *dc))?;
        before.push(format!(
            "before: rank {rank}: right: {}",
            right(&dc.to_vec()?)
        ));
    }
    before.sort();
    for line in before {
        println!("fact: {line}");
    }
    // For copies between the ranks after the kill: 1 MiB, past any eager
    // limit (a send to the dead rank then cannot complete).
    let first_of = |r: &str| ranks.iter().position(|x| x == r);
    let (Some(one), Some(two)) = (first_of("1"), first_of("2")) else {
        anyhow::bail!("no device of rank 1 or 2 among {ranks:?}");
    };
    let big: Vec<f32> = (0..1 << 18).map(|i| i as f32).collect();
    let mut big_on_one = DeviceBuffer::from_slice(remote[one], &big)?;
    let mut big_on_two = DeviceBuffer::from_slice(remote[two], &big)?;
    std::fs::write(format!("{ready}.tmp"), std::process::id().to_string())?;
    std::fs::rename(format!("{ready}.tmp"), &ready)?;
    while !Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut after = Vec::new();
    for ((add, da, db, dc), rank) in work.iter_mut().zip(&ranks) {
        let result = add
            .launch(LaunchConfig::default(), (&*da, &*db, &mut *dc))
            .and_then(|()| dc.to_vec());
        after.push(match result {
            Ok(c) => format!("after: rank {rank}: right: {}", right(&c)),
            Err(err) => {
                let text = format!("{err:#}");
                eprintln!("rank {rank}: {text}");
                format!(
                    "after: rank {rank}: error naming the death: {}",
                    text.contains(&format!("device server rank {rank} on"))
                        && text.contains("died (its process is gone)")
                )
            }
        });
    }
    // A later call on the dead rank's devices fails too, at once; the
    // other rank's devices take new work.
    for (device, rank) in remote.iter().zip(&ranks) {
        let result = DeviceBuffer::from_slice(device, &a).and_then(|d| d.to_vec());
        after.push(format!(
            "again: rank {rank}: {}",
            match result {
                Ok(v) => format!("copy right: {}", v == a),
                Err(_) => "error".into(),
            }
        ));
    }
    after.sort();
    for line in after {
        println!("fact: {line}");
    }
    // Device-to-device copies with the dead rank, both ways: the live
    // server's wait for its dead peer ends too, and it serves on. The
    // error names the dead rank's device ("remote device N (rank 2 on
    // ..."), whichever side of the copy it is, and tells its death.
    let names_death = |r: Result<(), omptarget::Error>| match r {
        Ok(()) => "no error".to_owned(),
        Err(err) => {
            let text = format!("{err:#}");
            format!(
                "error naming the death: {}",
                text.contains("(rank 2 on") && text.contains("device server rank 2 on")
            )
        }
    };
    println!(
        "fact: copy to the dead rank: {}",
        names_death(big_on_two.copy_from(&big_on_one))
    );
    println!(
        "fact: copy from the dead rank: {}",
        names_death(big_on_one.copy_from(&big_on_two))
    );
    let (add, da, db, dc) = &mut work[one];
    add.launch(LaunchConfig::default(), (&*da, &*db, &mut *dc))?;
    println!("fact: rank 1 computes on: right: {}", right(&dc.to_vec()?));
    drop((big_on_one, big_on_two));
    drop(work);
    drop(images);
    let report = runtime.shutdown();
    println!("fact: shutdown clean: {}", report.is_clean());
    let text = report.to_string();
    println!(
        "fact: report names the dead rank: {}",
        text.contains("device server rank 2 on") && text.contains("died")
    );
    eprintln!("{report}");
    Ok(())
}

#[test]
#[ignore = "the program rank of `the_rust_api_gets_errors_from_a_killed_server_and_keeps_the_others`'s MPI job"]
fn program_rank() {
    if let Err(err) = run_program_rank() {
        panic!("{err:#}");
    }
}

#[test]
fn the_rust_api_gets_errors_from_a_killed_server_and_keeps_the_others() {
    let tag = tag("kill-server-rust");
    let dir = tempfile::tempdir().unwrap();
    let kernel = vec_add_library(dir.path());
    let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
    let me = std::env::current_exe().unwrap();
    let mut cmd = job::mpirun_recovering();
    cmd.args(["-x", &format!("{KERNEL_VAR}={}", kernel.display())]);
    cmd.args(["-x", &format!("{READY_VAR}={}", ready.display())]);
    cmd.args(["-x", &format!("{GO_VAR}={}", go.display())]);
    cmd.args(["-np", "1"]).arg(me).args([
        "--ignored",
        "--exact",
        "faults::program_rank",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.args([":", "-x", "OMPTARGET_HOST_DEVICES=2"]);
    cmd.args(["-x", &format!("OMPTARGET_TEST_JOB={tag}"), "-np", "2"])
        .arg(job::server());
    let running = std::thread::spawn(move || job::run(cmd));
    if job::wait_for_file(&ready, &running).is_none() {
        let out = running.join().unwrap();
        panic!("the job ended before it was ready: {}", describe(&out));
    }
    job::kill(server_with_rank(&tag, 2));
    let killed = Instant::now();
    job::write_whole(&go, "go\n");
    let out = running.join().unwrap();
    let took = killed.elapsed();
    assert!(took < BOUNDED, "took {took:?}: {}", describe(&out));
    // mpirun says 0 under recovery; the program rank's test passed.
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(
        out.stdout.contains("test result: ok. 1 passed"),
        "{}",
        describe(&out)
    );
    let facts = job::facts(&out.stdout);
    assert_eq!(
        facts,
        [
            "remote devices: 4",
            "before: rank 1: right: true",
            "before: rank 1: right: true",
            "before: rank 2: right: true",
            "before: rank 2: right: true",
            "after: rank 1: right: true",
            "after: rank 1: right: true",
            "after: rank 2: error naming the death: true",
            "after: rank 2: error naming the death: true",
            "again: rank 1: copy right: true",
            "again: rank 1: copy right: true",
            "again: rank 2: error",
            "again: rank 2: error",
            "copy to the dead rank: error naming the death: true",
            "copy from the dead rank: error naming the death: true",
            "rank 1 computes on: right: true",
            "shutdown clean: false",
            "report names the dead rank: true",
        ],
        "{}",
        describe(&out)
    );
    assert_no_server_left(&tag, Duration::from_secs(10));
}
