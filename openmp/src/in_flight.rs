//! Which image loads are in flight on one device, so that threads racing
//! for a device's first region load each image once.
//!
//! The thread that loads holds no lock of ours (see [`super::load`]); one
//! that finds the image already being loaded waits on a condition variable,
//! holding no lock either. The wait is bounded: the loading thread may be
//! waiting for the dynamic loader's lock (its plugin dlopens) while the
//! waiting thread holds it (a library constructor that offloads), and
//! neither can tell. After [`LOAD_WAIT`] the waiter loads the image itself;
//! the two copies are then handled as any two loads that raced
//! (`TranslationTable::loaded`). A thread that finds its own load in flight
//! (a region started from inside its `load_binary`) loads at once.

use std::collections::BTreeMap;
#[cfg(test)]
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a thread waits for another thread's load of the same image on
/// the same device before it loads its own copy.
pub(crate) const LOAD_WAIT: Duration = Duration::from_secs(2);

/// The image loads in flight on one device: image address -> the loading
/// thread (`pthread_self`).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    images: Mutex<BTreeMap<usize, usize>>,
    done: Condvar,
    /// Threads inside [`InFlight::begin`]'s wait: tests wait for a waiter
    /// by this count instead of sleeping and hoping it got there.
    #[cfg(test)]
    waiting: AtomicUsize,
    /// Tests that check what a wait leads to set no bound here (see
    /// [`InFlight::wait`]): a loaded machine must not turn their wait
    /// into an overdue load.
    #[cfg(test)]
    unbounded: std::sync::atomic::AtomicBool,
}

/// This thread's id (`pthread_self`: no thread-local with a destructor).
fn me() -> usize {
    // SAFETY: always callable.
    unsafe { libc::pthread_self() as usize }
}

/// What [`InFlight::begin`] decided.
pub(crate) enum Turn<'a> {
    /// Load it: nobody else is. The load is in flight until this is dropped.
    Load(Loading<'a>),
    /// Another thread's load of it ended: look again at what it published.
    Ended,
    /// Another thread is still loading it after [`LOAD_WAIT`], or this
    /// thread is (it cannot wait for itself): load a copy.
    Overdue,
}

/// A load in flight; dropping it ends it and wakes the waiters.
pub(crate) struct Loading<'a> {
    in_flight: &'a InFlight,
    image: usize,
}

impl InFlight {
    /// Begin loading `image` (the address of the runtime's copy, kept alive
    /// by the caller), or wait, at most `wait`, for the load in flight.
    pub(crate) fn begin(&self, image: usize, wait: Duration) -> Turn<'_> {
        // `None`: a wait too long to represent, which is no bound.
        let deadline = Instant::now().checked_add(wait);
        let mut images = self.images.lock().unwrap_or_else(PoisonError::into_inner);
        match images.get(&image) {
            None => {
                images.insert(image, me());
                return Turn::Load(Loading {
                    in_flight: self,
                    image,
                });
            }
            Some(&loader) if loader == me() => return Turn::Overdue,
            Some(_) => {}
        }
        #[cfg(test)]
        self.waiting.fetch_add(1, SeqCst);
        #[cfg(test)]
        let _waiting = Waiting(&self.waiting);
        while images.contains_key(&image) {
            // The mutex is released while waiting.
            images = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Turn::Overdue;
                    }
                    self.done
                        .wait_timeout(images, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .done
                    .wait(images)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
        Turn::Ended
    }
}

/// Takes this thread back out of [`InFlight::waiting`] however `begin`
/// returns.
#[cfg(test)]
struct Waiting<'a>(&'a AtomicUsize);

#[cfg(test)]
impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl InFlight {
    /// How long [`InFlight::begin`] waits for another thread's load:
    /// [`LOAD_WAIT`] (no bound in tests that asked for none).
    pub(crate) fn wait(&self) -> Duration {
        #[cfg(test)]
        if self.unbounded.load(SeqCst) {
            return Duration::MAX;
        }
        LOAD_WAIT
    }
}

#[cfg(test)]
impl InFlight {
    /// Blocks until `n` threads wait in [`InFlight::begin`] (a test's
    /// deterministic "the other thread got there") and says so, or until
    /// `gone()` says the thread expected to wait has ended without waiting
    /// (false: a runtime that does not wait fails the test's assertion
    /// instead of hanging it).
    pub(crate) fn wait_for_waiters(&self, n: usize, gone: impl Fn() -> bool) -> bool {
        while self.waiting.load(SeqCst) < n {
            if gone() {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// [`InFlight::wait`] is unbounded from now on.
    pub(crate) fn wait_without_bound(&self) {
        self.unbounded.store(true, SeqCst);
    }
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        let mut images = self
            .in_flight
            .images
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        images.remove(&self.image);
        drop(images);
        self.in_flight.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_loader_waits_for_the_first() {
        let in_flight = InFlight::default();
        let Turn::Load(first) = in_flight.begin(1, LOAD_WAIT) else {
            panic!("nobody was loading");
        };
        assert!(matches!(in_flight.begin(2, LOAD_WAIT), Turn::Load(_)));
        std::thread::scope(|s| {
            // No bound that a loaded machine could pass: the waiter must
            // see the load end, not give up on it.
            let waiter = s.spawn(|| matches!(in_flight.begin(1, Duration::MAX), Turn::Ended));
            assert!(
                in_flight.wait_for_waiters(1, || waiter.is_finished()),
                "the second loader did not wait"
            );
            drop(first);
            assert!(waiter.join().unwrap());
        });
        assert!(matches!(in_flight.begin(1, LOAD_WAIT), Turn::Load(_)));
    }

    #[test]
    fn the_wait_is_bounded() {
        let in_flight = InFlight::default();
        let _first = in_flight.begin(1, LOAD_WAIT);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let started = Instant::now();
                let turn = in_flight.begin(1, Duration::from_millis(30));
                matches!(turn, Turn::Overdue) && started.elapsed() >= Duration::from_millis(30)
            });
            assert!(waiter.join().unwrap());
        });
    }

    /// With no bound on the wait, a thread that waited for itself would
    /// hang here (the runner's hang limit fails it); no clock decides.
    #[test]
    fn the_loading_thread_never_waits_for_itself() {
        let in_flight = InFlight::default();
        let _first = in_flight.begin(1, LOAD_WAIT);
        assert!(matches!(in_flight.begin(1, Duration::MAX), Turn::Overdue));
    }
}
