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
        let deadline = Instant::now() + wait;
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
        while images.contains_key(&image) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Turn::Overdue;
            }
            // The mutex is released while waiting.
            images = self
                .done
                .wait_timeout(images, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Turn::Ended
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
            let waiter = s.spawn(|| matches!(in_flight.begin(1, LOAD_WAIT), Turn::Ended));
            std::thread::sleep(Duration::from_millis(20));
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

    #[test]
    fn the_loading_thread_never_waits_for_itself() {
        let in_flight = InFlight::default();
        let _first = in_flight.begin(1, LOAD_WAIT);
        let started = Instant::now();
        assert!(matches!(in_flight.begin(1, LOAD_WAIT), Turn::Overdue));
        assert!(started.elapsed() < LOAD_WAIT);
    }
}
