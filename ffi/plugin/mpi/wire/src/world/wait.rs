//! Completing a request: polled, bounded by its peer's life, and given
//! up on (cancelled, or its buffer kept) when the peer is gone.
use super::World;
use crate::error::{Failure, MpiError, WireError};
use crate::mpi::{self, Status};
use std::ffi::c_int;
use std::time::{Duration, Instant};

/// How long a wait spins on `MPI_Test` before it starts to nap.
pub const SPIN: Duration = Duration::from_millis(50);
/// The nap between two tests after [`SPIN`].
pub const NAP: Duration = Duration::from_micros(100);
/// How often a wait asks whether its peer still lives.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

impl World {
    /// Call `test` until it says done; `Err` when it fails, or when
    /// `watch` (asked every [`CHECK_EVERY`]) says the wait is hopeless.
    /// Spins for [`SPIN`], then naps [`NAP`] between tests.
    pub fn poll(
        &self,
        watch: &dyn Fn() -> Option<String>,
        mut test: impl FnMut() -> Result<bool, MpiError>,
    ) -> Result<(), Failure> {
        // The clock is read every 64th poll: on a VM without a usable TSC
        // it is a system call, and a poll that reads it each time spends
        // more time there than in MPI (perf: 12% of a server's time).
        if test()? {
            return Ok(());
        }
        let start = Instant::now();
        let mut next_check = start + CHECK_EVERY;
        let mut polls: u32 = 0;
        let mut napping = false;
        loop {
            if test()? {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if !napping && !polls.is_multiple_of(64) {
                // No `spin_loop` hint, as in MPI's own blocking waits:
                // each test is already a call into MPI's progress engine,
                // and a pause only delays noticing the message.
                continue;
            }
            let now = Instant::now();
            if now >= next_check {
                if let Some(why) = watch() {
                    return Err(Failure::GaveUp(why));
                }
                next_check = now + CHECK_EVERY;
            }
            napping = now - start >= SPIN;
            if napping {
                std::thread::sleep(NAP);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Complete `request` (a send or receive with `peer`), or cancel and
    /// free it when `watch` gives up. A request that completes while it
    /// is being given up completed: its status is returned, as if the
    /// wait had not given up (a receive's message is the caller's, not
    /// lost).
    pub(super) fn complete(
        &self,
        what: &'static str,
        mut request: mpi::Handle,
        watch: &dyn Fn() -> Option<String>,
    ) -> Result<Status, WireError> {
        let m = &self.mpi;
        let mut status = Status::default();
        let waited = self.poll(watch, || {
            let mut flag: c_int = 0;
            // SAFETY: an active request of ours; `status` is written.
            m.check(what, unsafe {
                m.test(&mut request, &mut flag, &mut status)
            })?;
            Ok(flag != 0)
        });
        let Err(err) = waited else {
            return Ok(status);
        };
        if m.is_request_null(request) {
            return Err(WireError::Failed(err));
        }
        match self.abandon(&mut request) {
            Abandoned::Completed(status) => Ok(status),
            Abandoned::Cancelled => Err(WireError::Failed(err)),
            Abandoned::Unconfirmed => Err(WireError::unconfirmed(err)),
        }
    }

    /// Give up on `request`, still active: let progress take what its
    /// peer sent before it died, cancel, and wait a little for it to
    /// complete, so that MPI writes no more into its buffer.
    pub(super) fn abandon(&self, request: &mut mpi::Handle) -> Abandoned {
        let m = &self.mpi;
        let settle = |limit: Duration, request: &mut mpi::Handle| -> Option<Abandoned> {
            let until = Instant::now() + limit;
            loop {
                let mut flag: c_int = 0;
                let mut status = Status::default();
                // SAFETY: an active request of ours.
                let code = unsafe { m.test(request, &mut flag, &mut status) };
                if flag != 0 || m.is_request_null(*request) {
                    if code != mpi::SUCCESS {
                        // Completed in error (Open MPI 4.1 frees it then):
                        // nothing of it to use.
                        return Some(Abandoned::Cancelled);
                    }
                    return Some(if status.cancelled {
                        Abandoned::Cancelled
                    } else {
                        Abandoned::Completed(status)
                    });
                }
                if Instant::now() >= until {
                    return None;
                }
                std::thread::sleep(NAP);
            }
        };
        if let Some(settled) = settle(Duration::from_millis(50), request) {
            return settled;
        }
        // SAFETY: still active: cancelled, then waited for.
        unsafe { m.cancel(request) };
        if let Some(settled) = settle(Duration::from_millis(200), request) {
            return settled;
        }
        // SAFETY: still active: MPI frees it whenever it completes.
        unsafe { m.request_free(request) };
        Abandoned::Unconfirmed
    }

    /// The watch of a wait for `rank` bounded by its life only.
    pub fn watch_life(&self, rank: i32) -> impl Fn() -> Option<String> + '_ {
        move || self.death_of(rank)
    }
}

/// How a request given up on ended.
pub(super) enum Abandoned {
    /// Cancelled: MPI will not touch its buffer.
    Cancelled,
    /// Completed before it could be cancelled: its message (or send) went
    /// through.
    Completed(Status),
    /// Neither, within the time allowed: freed, and its buffer must never
    /// be.
    Unconfirmed,
}
