//! Whether a device server still answers: a wait for one is bounded even
//! when its process lives but does not run (stopped by `SIGSTOP` or a
//! debugger, swapped out for good, hung outside a kernel).
//!
//! The check of [`super::peer`] sees only death, and only on this host.
//! This one works on every host and sees silence: a wait for a server
//! that has lasted [`PROBE_AFTER`] sends it a ping ([`PING_TAG`]) every
//! [`PROBE_EVERY`] while none is outstanding; the server's [`Responder`],
//! a thread of its own, answers each with a pong ([`PONG_TAG`]) whatever
//! its main thread does, so a kernel that runs for an hour is not
//! silence. A server that has not answered a ping for the limit
//! (`OMPTARGET_MPI_TIMEOUT` seconds, default [`DEFAULT_LIMIT`]; `0`: no
//! limit) is given up on for good: the wait fails with an error that names
//! it ("device server rank 2 on HOST did not answer for 60 s"), and from
//! then on it counts as dead ([`World::death_of`]): no request goes to it,
//! it is not told to exit, and MPI is not finalised (its finalisation
//! would wait for the silent process; the launcher ends the job). A
//! spawned server on this host is ended by the rank that spawned it when
//! it leaves, since the program may end well and its launcher would wait
//! for the stopped server.
//!
//! Pongs from one server to one rank share [`PONG_TAG`] and are matched
//! by source: any pong says the server answers, whichever wait posted the
//! receive that took it. A pong whose wait ended first stays in MPI's
//! queue until a later probe of that server takes it: each such wait (one
//! that ended in the few milliseconds between a ping and its pong) can
//! credit a later probe one period too many. (Numbered pongs, each probe
//! taking only its own, were tried and undone: two waits probing one
//! server at once can each take the other's pong.)
use super::World;
use crate::mpi::{self, Handle, Status};
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tag of a ping to a server (below the reply tags, beside the
/// request tag).
pub const PING_TAG: i32 = 3;
/// The tag of a server's pong.
pub const PONG_TAG: i32 = 4;
/// How long a wait for a server lasts, counted from its first check (a
/// [`super::CHECK_EVERY`] in), before it starts to probe it: a short call
/// sends no ping.
pub const PROBE_AFTER: Duration = Duration::from_secs(1);
/// The time between two pings of one wait.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// The limit when `OMPTARGET_MPI_TIMEOUT` does not say.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(60);
/// The variable that sets the limit, in seconds.
pub const LIMIT_VAR: &str = "OMPTARGET_MPI_TIMEOUT";
/// How often the responder looks for a ping.
const RESPONDER_NAP: Duration = Duration::from_millis(2);

/// `OMPTARGET_MPI_TIMEOUT` is not a number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{LIMIT_VAR}={value:?}: expected whole seconds a device server may stay silent (0: no limit)"
)]
pub struct BadLimit {
    /// What it says.
    pub value: String,
}

/// The limit `var` sets: `Ok(None)` for no limit.
pub fn limit_by(var: impl Fn(&str) -> Option<String>) -> Result<Option<Duration>, BadLimit> {
    let Some(value) = var(LIMIT_VAR) else {
        return Ok(Some(DEFAULT_LIMIT));
    };
    match value.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(seconds) => Ok(Some(Duration::from_secs(seconds))),
        Err(_) => Err(BadLimit { value }),
    }
}

impl World {
    /// The watch of a wait for `rank`: its death, and, when it is a
    /// device server, its silence past the limit
    /// ([`super::liveness`]).
    pub fn watch_rank(&self, rank: i32) -> impl Fn() -> Option<String> + '_ {
        let prober = match (self.limit, self.roles.get(rank as usize)) {
            (Some(limit), Some(super::Role::Server)) if rank != self.rank => {
                Some(Prober::new(self, rank, limit))
            }
            _ => None,
        };
        move || {
            self.death_of(rank)
                .or_else(|| prober.as_ref().and_then(|p| p.check()))
        }
    }
}

impl World {
    /// End the servers this rank spawned that were given up on for their
    /// silence and live on this host (`SIGKILL`, by the pid and start time
    /// they gave when joining): a stopped spawned server would otherwise
    /// keep its launcher waiting for ever once the program ends, as MPI
    /// is not finalised past a silent peer. One on another host is left
    /// to the launcher. Only from a program rank, for its own servers.
    pub(super) fn end_silent_servers(&self) {
        let silent: Vec<i32> = self
            .silent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(rank, _)| *rank)
            .collect();
        for rank in silent {
            // Alive, on this host, and still the process that joined.
            if self.peer_alive(rank) != Some(true) {
                continue;
            }
            let pid = self.peers[rank as usize].pid;
            // SAFETY: a plain syscall, to the pid (checked with its start
            // time just above) of a server this rank spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let line = format!(
                "omptarget-rs plugin mpi: {} ended (SIGKILL): it stayed silent, and it was this rank's own\n",
                self.describe(rank)
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
    }
}

/// A ping sent and its pong awaited; the buffers live until both
/// requests are complete or given up on.
struct Pending {
    /// When the ping went.
    at: Instant,
    ping: Handle,
    pong: Handle,
    sent: Box<[u8; 4]>,
    answer: Box<[u8; 4]>,
}

/// One wait's probing of server `rank`.
pub(super) struct Prober<'w> {
    world: &'w World,
    rank: i32,
    limit: Duration,
    /// Taken at the wait's first check (a quarter of a second in), not
    /// per call: most waits end before it, and on this kind of VM a clock
    /// read is a system call.
    last_heard: Cell<Option<Instant>>,
    last_ping: Cell<Option<Instant>>,
    pending: RefCell<Option<Pending>>,
}

impl<'w> Prober<'w> {
    pub(super) fn new(world: &'w World, rank: i32, limit: Duration) -> Prober<'w> {
        Prober {
            world,
            rank,
            limit,
            last_heard: Cell::new(None),
            last_ping: Cell::new(None),
            pending: RefCell::new(None),
        }
    }

    /// Asked every [`super::CHECK_EVERY`] of the wait: `Some(why)` once
    /// the server has been silent for the limit.
    pub(super) fn check(&self) -> Option<String> {
        let now = Instant::now();
        let heard = *self.last_heard.get().get_or_insert(now);
        self.last_heard.set(Some(heard));
        if now - heard < PROBE_AFTER {
            return None;
        }
        let mut pending = self.pending.borrow_mut();
        if let Some(p) = pending.as_mut() {
            if self.answered(p) {
                *pending = None;
                self.last_heard.set(Some(now));
                return None;
            }
        }
        // Silent: a ping unanswered for the limit (a wait that has just
        // begun to probe gives the server the whole limit).
        if pending.as_ref().is_some_and(|p| now - p.at >= self.limit) {
            let why = format!(
                "{} did not answer for {} s (a stopped or hung process; {LIMIT_VAR} sets the limit)",
                self.world.describe(self.rank),
                self.limit.as_secs()
            );
            self.world.note_silent(self.rank, &why);
            return Some(why);
        }
        let due = self
            .last_ping
            .get()
            .is_none_or(|at| now - at >= PROBE_EVERY);
        if pending.is_none() && due {
            self.last_ping.set(Some(now));
            *pending = self.ping();
        }
        None
    }

    /// Send a ping and post the receive of its pong; `None` when MPI
    /// refuses either (the wait goes on, bounded by the peer's life).
    fn ping(&self) -> Option<Pending> {
        let m = &self.world.mpi;
        let mut p = Pending {
            at: Instant::now(),
            ping: m.predefined.request_null,
            pong: m.predefined.request_null,
            sent: Box::new(self.world.rank.to_le_bytes()),
            answer: Box::new([0; 4]),
        };
        // SAFETY: the boxed buffers outlive the requests (`Pending` is
        // only dropped once both are complete or given up on).
        let posted = unsafe {
            m.irecv(
                p.answer.as_mut_ptr().cast(),
                4,
                m.predefined.byte,
                self.rank,
                PONG_TAG,
                self.world.comm,
                &mut p.pong,
            )
        };
        if posted != mpi::SUCCESS {
            return None;
        }
        // SAFETY: as above.
        let sent = unsafe {
            m.isend(
                p.sent.as_ptr().cast(),
                4,
                m.predefined.byte,
                self.rank,
                PING_TAG,
                self.world.comm,
                &mut p.ping,
            )
        };
        if sent != mpi::SUCCESS {
            self.give_up(p);
            return None;
        }
        Some(p)
    }

    /// Whether `p`'s pong came (its ping's send completed on the way).
    fn answered(&self, p: &mut Pending) -> bool {
        let m = &self.world.mpi;
        let mut flag: c_int = 0;
        let mut status = Status::default();
        if !m.is_request_null(p.ping) {
            // SAFETY: an active request of ours.
            unsafe { m.test(&mut p.ping, &mut flag, &mut status) };
        }
        flag = 0;
        // SAFETY: an active request of ours (a completed one is null, and
        // a test of the null request answers at once).
        let code = unsafe { m.test(&mut p.pong, &mut flag, &mut status) };
        code == mpi::SUCCESS && flag != 0 && m.is_request_null(p.ping)
    }

    /// Cancel what is still active of `p`; its buffers are kept for good
    /// where MPI does not confirm the cancel.
    fn give_up(&self, mut p: Pending) {
        let m = &self.world.mpi;
        let mut confirmed = true;
        for request in [&mut p.ping, &mut p.pong] {
            if !m.is_request_null(*request) {
                confirmed &= !matches!(
                    self.world.abandon(request),
                    super::wait::Abandoned::Unconfirmed
                );
            }
        }
        if !confirmed {
            // MPI may still write into (or read) them.
            std::mem::forget(p);
        }
    }
}

impl Drop for Prober<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pending.get_mut().take() {
            self.give_up(p);
        }
    }
}

/// A server's thread that answers pings while its main thread serves
/// (or runs a kernel). [`Responder::stop`] ends it.
pub struct Responder {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Responder {
    /// Start answering the pings that come to `world`'s communicator.
    pub fn start(world: Arc<World>) -> std::io::Result<Responder> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("omptarget-mpi-pong".into())
            .spawn(move || answer_pings(&world, &flag))?;
        Ok(Responder {
            stop,
            thread: Some(thread),
        })
    }

    /// Stop answering; returns once the thread has ended (its receive
    /// cancelled), so the communicator may be freed.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The responder's loop: a receive for any rank's ping, tested every
/// [`RESPONDER_NAP`] (no core spent spinning beside the kernels), and a
/// pong sent back for each.
fn answer_pings(world: &World, stop: &AtomicBool) {
    let m = &world.mpi;
    // On the heap, not this thread's stack: a receive that cannot be
    // confirmed cancelled keeps its buffer for good (leaked), and a stack
    // array would be freed with the thread while MPI may still write it.
    let mut ping: Box<[u8; 4]> = Box::new([0; 4]);
    while !stop.load(Ordering::Acquire) {
        let mut request = m.predefined.request_null;
        // SAFETY: `ping` outlives the request: it completes, or is given
        // up on (cancelled), before this loop goes on or returns, or is
        // leaked where MPI may still write into it.
        let posted = unsafe {
            m.irecv(
                ping.as_mut_ptr().cast(),
                4,
                m.predefined.byte,
                world.any_source(),
                PING_TAG,
                world.comm,
                &mut request,
            )
        };
        if posted != mpi::SUCCESS {
            return;
        }
        let mut status = Status::default();
        loop {
            let mut flag: c_int = 0;
            // SAFETY: an active request of ours.
            let code = unsafe { m.test(&mut request, &mut flag, &mut status) };
            if code != mpi::SUCCESS {
                // The request may still be active: its buffer is kept.
                if !m.is_request_null(request) {
                    Box::leak(ping);
                }
                return;
            }
            if flag != 0 {
                break;
            }
            if stop.load(Ordering::Acquire) {
                if let super::wait::Abandoned::Unconfirmed = world.abandon(&mut request) {
                    // MPI may still write into it: never reused or freed.
                    Box::leak(ping);
                }
                return;
            }
            std::thread::sleep(RESPONDER_NAP);
        }
        let pong = Box::new(*ping);
        let mut send = m.predefined.request_null;
        // SAFETY: `pong` lives until the send completes below (or for
        // good, where MPI does not confirm its cancel).
        let sent = unsafe {
            m.isend(
                pong.as_ptr().cast(),
                4,
                m.predefined.byte,
                status.source,
                PONG_TAG,
                world.comm,
                &mut send,
            )
        };
        if sent != mpi::SUCCESS {
            continue;
        }
        // A 4-byte send completes at once (eager); bounded by the pinger's
        // life, as every wait.
        let watch = world.watch_life(status.source);
        if let Err(crate::WireError::Unconfirmed { .. }) = world.complete("MPI_Isend", send, &watch)
        {
            // MPI may still read it.
            Box::leak(pong);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_whole_seconds_zero_for_none() {
        let var = |v: Option<&'static str>| move |_: &str| v.map(str::to_owned);
        assert_eq!(limit_by(var(None)), Ok(Some(DEFAULT_LIMIT)));
        assert_eq!(limit_by(var(Some("5"))), Ok(Some(Duration::from_secs(5))));
        assert_eq!(limit_by(var(Some(" 0 "))), Ok(None));
        for bad in ["soon", "-1", "1.5", ""] {
            assert_eq!(
                limit_by(var(Some(bad))),
                Err(BadLimit { value: bad.into() }),
                "{bad:?}"
            );
        }
    }
}
