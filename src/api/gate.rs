//! The gate of one [`crate::Image`] between the host's accesses to its
//! globals ([`crate::Global::read`], [`crate::Global::write`]) and the
//! launches of its kernels.
//!
//! A kernel may read and write its image's globals whenever it runs
//! (`Image::kernel`'s contract lets it), so a host access to a global
//! while one runs, or is queued and may run, would be a data race. The
//! gate makes the two exclusive:
//!
//! * a blocking launch ([`crate::Kernel::launch`]) holds the gate while
//!   it runs; launches do not exclude each other (the kernels of one image
//!   are data-race-free among themselves, by the same contract);
//! * a launch queued in a [`crate::scope`] counts as pending from the
//!   moment it is queued until its queue is synchronised
//!   ([`crate::ScopedQueue::synchronize`], or the end of the scope, which
//!   synchronises every queue, an attached [`crate::Queue`]'s too);
//! * a global access waits for running blocking launches (they end on
//!   their own) but never for a queued one, which only its owner's
//!   synchronisation can end (waiting could deadlock that very owner):
//!   it is refused with [`Error::LaunchesPending`] instead;
//! * accesses to the image's globals are serialised, and a waiting access
//!   goes before launches that come after it (launches on other threads
//!   cannot starve it).
use crate::{Error, Result};
use std::sync::{Condvar, Mutex};

#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Blocking launches running now.
    running: usize,
    /// Scope queues with launches of the image queued since they were
    /// last synchronised (each queue counts once).
    queued: usize,
    /// A global of the image is being read or written.
    accessing: bool,
    /// Global accesses waiting for running launches to end.
    waiting: usize,
    /// Launches waiting for an access to end. Waiters are woken only when
    /// there are some: `notify_all` is a system call even when nobody
    /// waits, on every launch.
    launches_waiting: usize,
}

impl State {
    /// A launch must wait: a global access is in progress or waiting.
    fn launch_waits(&self) -> bool {
        self.accessing || self.waiting > 0
    }
}

/// A blocking launch in progress (ends on drop, also on unwinding).
pub(crate) struct Launch<'g>(&'g Gate);

/// A global access in progress.
pub(crate) struct Access<'g>(&'g Gate);

impl Gate {
    fn wait<'a>(
        &self,
        guard: std::sync::MutexGuard<'a, State>,
    ) -> std::sync::MutexGuard<'a, State> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Enter for a blocking launch, after any global access in progress
    /// or waiting.
    pub(crate) fn launch(&self) -> Launch<'_> {
        let mut state = self.wait_to_launch();
        state.running += 1;
        Launch(self)
    }

    /// The state, once no global access is in progress or waiting.
    fn wait_to_launch(&self) -> std::sync::MutexGuard<'_, State> {
        let mut state = crate::sync::lock(&self.state);
        while state.launch_waits() {
            state.launches_waiting += 1;
            state = self.wait(state);
            state.launches_waiting -= 1;
        }
        state
    }

    /// Release `state`, waking the waiters if there are any.
    fn notify(&self, state: std::sync::MutexGuard<'_, State>) {
        let anyone = state.waiting > 0 || state.launches_waiting > 0;
        drop(state);
        if anyone {
            self.changed.notify_all();
        }
    }

    /// Count one more queue with pending launches, after any global
    /// access in progress or waiting. The caller releases it with
    /// [`Gate::release_queued`] once that queue is synchronised.
    pub(crate) fn queue_launches(&self) {
        let mut state = self.wait_to_launch();
        state.queued += 1;
    }

    /// A queue counted by [`Gate::queue_launches`] was synchronised: its
    /// launches have ended.
    pub(crate) fn release_queued(&self) {
        let mut state = crate::sync::lock(&self.state);
        state.queued -= 1;
        self.notify(state);
    }

    /// Enter for reading or writing the global `name`: after running
    /// blocking launches and other accesses; refused while launches are
    /// queued.
    pub(crate) fn access(&self, name: &str) -> Result<Access<'_>> {
        let mut state = crate::sync::lock(&self.state);
        state.waiting += 1;
        loop {
            if state.queued > 0 {
                let queues = state.queued;
                state.waiting -= 1;
                // Launches may have been waiting for this access.
                self.notify(state);
                return Err(Error::LaunchesPending {
                    global: name.to_owned(),
                    queues,
                });
            }
            if state.running == 0 && !state.accessing {
                break;
            }
            state = self.wait(state);
        }
        state.waiting -= 1;
        state.accessing = true;
        Ok(Access(self))
    }
}

impl Drop for Launch<'_> {
    fn drop(&mut self) {
        let mut state = crate::sync::lock(&self.0.state);
        state.running -= 1;
        self.0.notify(state);
    }
}

impl Drop for Access<'_> {
    fn drop(&mut self) {
        let mut state = crate::sync::lock(&self.0.state);
        state.accessing = false;
        self.0.notify(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_launches_refuse_accesses_until_released() {
        let gate = Gate::default();
        drop(gate.access("g").expect("nothing pending"));
        gate.queue_launches();
        gate.queue_launches();
        let err = gate.access("g").err().expect("two queues pending");
        assert!(
            matches!(err, Error::LaunchesPending { ref global, queues: 2 } if global == "g"),
            "{err}"
        );
        gate.release_queued();
        assert!(gate.access("g").is_err(), "one queue still pending");
        gate.release_queued();
        drop(gate.access("g").expect("all released"));
        // A refused access leaves nothing behind: launches still enter.
        drop(gate.launch());
    }

    #[test]
    fn an_access_waits_for_a_running_launch_and_launches_for_it() {
        let gate = Gate::default();
        let order = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let launch = gate.launch();
            let accessor = s.spawn(|| {
                let _access = gate.access("g").expect("nothing queued");
                crate::sync::lock(&order).push("access");
            });
            // The access cannot get in before the launch ends; wait until
            // it is waiting (no timing: the state says so), or, were the
            // gate open, until it got in.
            while crate::sync::lock(&gate.state).waiting == 0
                && crate::sync::lock(&order).is_empty()
            {
                std::thread::yield_now();
            }
            crate::sync::lock(&order).push("launch ends");
            drop(launch);
            accessor.join().expect("no panic");
        });
        assert_eq!(*crate::sync::lock(&order), ["launch ends", "access"]);
        let state = crate::sync::lock(&gate.state);
        assert_eq!(
            (state.running, state.queued, state.accessing, state.waiting),
            (0, 0, false, 0)
        );
    }
}
