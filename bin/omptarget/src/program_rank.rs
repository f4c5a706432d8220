//! `omptarget mpi-program-rank -- PROGRAM ARGS...` (hidden): the
//! program's rank of the job `run --mpi N` starts.
//!
//! The device servers wait, inside `MPI_Init_thread`, for every program
//! rank to join; a program that never starts the offload runtime
//! (`/bin/true`, a script) never joins, and the job would never end.
//! `mpirun` therefore starts this command as the program's rank: it runs
//! the program as its child, passing on the signals `mpirun` sends
//! ([`crate::signals`]), and once the program ended without joining, it
//! joins in its place and tells the servers it is done
//! (`omptarget_plugin_mpi::stand_in`, the plugin's own close). It exits
//! with the program's status, or dies of the program's signal.
//!
//! It does not stand in when it passed on a signal asking the job to end:
//! `mpirun` is tearing the job down, servers included, and would only
//! find this rank starting MPI.
//!
//! The program dies with this process ([`libc::PR_SET_PDEATHSIG`]): when
//! `mpirun` kills the rank with SIGKILL, nothing of it is left behind.
use crate::signals::Forwarding;
use anyhow::{Context, Result};
use omptarget_plugin_mpi::stand_in;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitCode};

/// Run `program` (the program and its arguments) as the job's program
/// rank; its status.
pub fn program_rank(program: &[OsString]) -> Result<ExitCode> {
    let signals = Forwarding::block().context("blocking the signals to pass on")?;
    let (name, args) = program.split_first().context("no program to run")?;
    let name = name.to_string_lossy().into_owned();
    // Removed by the program's MPI plugin as it joins.
    let mark = tempfile::Builder::new()
        .prefix("omptarget-rank-")
        .tempfile()
        .context("creating the program rank's mark")?
        .into_temp_path();
    let mark_path = std::path::absolute(&mark)?;
    let mut cmd = Command::new(&program[0]);
    cmd.args(args).env(stand_in::MARK_VAR, &mark_path);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls
    // only prctl and getppid, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // This process died before the prctl: no signal will come.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("omptarget ended"));
            }
            Ok(())
        })
    };
    let status = signals
        .spawn(&mut cmd)
        .with_context(|| format!("cannot run {name}"))
        .and_then(|mut child| {
            signals
                .wait(&mut child)
                .with_context(|| format!("waiting for {name}"))
        });
    let ended_from_outside = signals.ended_from_outside();
    // From here a signal `mpirun` sends ends this process. Failing that,
    // it is still ended by mpirun's SIGKILL: the stand-in must not be
    // skipped for it.
    if let Err(err) = signals.unblock() {
        eprintln!("omptarget: unblocking the signals passed on: {err}");
    }
    if !ended_from_outside && !joined(&mark_path) {
        stand_in_for(&name);
    }
    drop(mark);
    let status = status?;
    if let Some(signal) = status.signal() {
        die_of(signal);
    }
    Ok(ExitCode::from(status.code().map_or(1, |c| c as u8)))
}

/// Whether the program joined (its plugin removed the mark). An unknown
/// answer counts as joined: a second join as this rank would break the
/// job, while a missing one leaves it waiting, which `mpirun` can end.
fn joined(mark: &Path) -> bool {
    match std::fs::symlink_metadata(mark) {
        Ok(_) => false,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => true,
        Err(err) => {
            eprintln!(
                "omptarget: cannot tell whether the program joined the MPI job ({}: {err}); not standing in",
                mark.display()
            );
            true
        }
    }
}

/// Join the job in the place of `program`, which never did, and tell the
/// servers this rank is done; a failure is said, not returned: the
/// program's status is still the rank's.
fn stand_in_for(program: &str) {
    let why = format!("{program} ended without starting the offload runtime");
    match stand_in::stand_in(&why) {
        Ok(acks) => {
            for (rank, ack) in acks {
                if let Err(err) = ack {
                    eprintln!("omptarget: device server rank {rank}: {err}");
                }
            }
        }
        Err(err) => eprintln!("omptarget: joining the MPI job in {program}'s place: {err}"),
    }
}

/// End this process by `signal`, as the program ended, so that `mpirun`
/// reports the program's death; 128 + `signal` if it does not end it.
fn die_of(signal: libc::c_int) -> ! {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls on this process's own limits, disposition and
    // mask; the set is initialised by sigemptyset before use. No core of
    // this process: the program wrote its own, if any.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}
