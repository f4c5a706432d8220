//! [`ReadMostly`]: a reader-writer lock for state that every call reads and
//! only a lifecycle step writes (a plugin's init and deinit).
//!
//! `std::sync::RwLock` keeps its readers in one word: every read of every
//! thread writes that word's cache line, so two threads calling a plugin
//! bounce it between cores on every call. Here a reader counts itself in
//! its thread's stripe ([`StripedCounts`]) and then reads the `writing`
//! flag; a writer sets the flag and then waits until the stripes sum to
//! zero. Reads cost one atomic add and subtract on a line no other thread
//! writes (unless two thread ids hash alike); writes are rare and wait.
//!
//! Like std's writer-preferring lock, a thread that reads while already
//! reading can deadlock against a waiting writer; a writer must not read.

use crate::striped::StripedCounts;
use crate::sync::{yield_now, AtomicBool, Mutex, MutexGuard, UnsafeCell};
use std::sync::atomic::Ordering::SeqCst;

/// A value read by many threads at once and written by one at a time.
pub struct ReadMostly<T> {
    value: UnsafeCell<T>,
    readers: StripedCounts,
    /// A writer holds `writers` and waits for (or has) no reader.
    writing: AtomicBool,
    writers: Mutex<()>,
}

// SAFETY: `value` is read through `&T` by readers (needs `T: Sync`) and
// written through `&mut T` or moved by one writer at a time while no reader
// is counted (needs `T: Send`); the protocol above ensures the two never
// overlap.
unsafe impl<T: Send + Sync> Sync for ReadMostly<T> {}
// SAFETY: moving the lock moves the owned `T` (`T: Send`).
unsafe impl<T: Send> Send for ReadMostly<T> {}

/// A read in progress (counted in the stripe `stripe`).
pub struct ReadGuard<'a, T> {
    lock: &'a ReadMostly<T>,
    stripe: usize,
    /// The model's record of this read, ended before the count is
    /// (`Option` so that `drop` can end it first).
    #[cfg(loom)]
    access: Option<loom::cell::ConstPtr<T>>,
}

/// A write in progress: no reader is counted until it is dropped.
pub struct WriteGuard<'a, T> {
    lock: &'a ReadMostly<T>,
    _writers: MutexGuard<'a, ()>,
    /// The model's record of this write, ended before `writing` is
    /// cleared.
    #[cfg(loom)]
    access: Option<loom::cell::MutPtr<T>>,
}

impl<T> ReadMostly<T> {
    /// A lock holding `value` (usable in a `static`).
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Self {
        ReadMostly {
            value: UnsafeCell::new(value),
            readers: StripedCounts::new(),
            writing: AtomicBool::new(false),
            writers: Mutex::new(()),
        }
    }

    /// A lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> Self {
        ReadMostly {
            value: UnsafeCell::new(value),
            readers: StripedCounts::new(),
            writing: AtomicBool::new(false),
            writers: Mutex::new(()),
        }
    }

    /// Read, on the thread `me` (`pthread_self`, or any per-thread non-zero
    /// id): waits only while a writer holds or waits for the lock.
    pub fn read(&self, me: usize) -> ReadGuard<'_, T> {
        let stripe = StripedCounts::stripe_of(me);
        loop {
            self.readers.add(stripe, 1);
            if !self.writing.load(SeqCst) {
                return ReadGuard {
                    lock: self,
                    stripe,
                    #[cfg(loom)]
                    access: Some(self.value.get()),
                };
            }
            // A writer is waiting for readers to leave: leave, wait, retry.
            self.readers.sub(stripe, 1);
            let mut backoff = Backoff::default();
            while self.writing.load(SeqCst) {
                backoff.wait();
            }
        }
    }

    /// Write: waits for the other writers, then for every reader to leave.
    pub fn write(&self) -> WriteGuard<'_, T> {
        match self.write_unless(false, || false) {
            Ok(guard) => guard,
            Err(_) => unreachable!("a write without a deadline waits for every reader"),
        }
    }

    /// [`Self::write`], giving up once `limit` has passed with readers
    /// still counted (a reader inside a kernel that does not end, or this
    /// very thread reading: either would make `write` wait forever), or
    /// with another writer still holding the lock. Then nothing is
    /// written, the readers held back meanwhile go on, and the error holds
    /// how many readers were counted.
    #[cfg(not(loom))]
    pub fn try_write_for(
        &self,
        limit: std::time::Duration,
    ) -> Result<WriteGuard<'_, T>, StillRead> {
        // A limit too far to represent is no limit.
        match std::time::Instant::now().checked_add(limit) {
            Some(deadline) => self.write_unless(true, || std::time::Instant::now() >= deadline),
            None => self.write_unless(false, || false),
        }
    }

    /// [`Self::try_write_for`] for the loom model, which has no clock:
    /// `expired` is asked at each point where the real one reads it.
    #[cfg(loom)]
    pub fn try_write_unless(
        &self,
        expired: impl FnMut() -> bool,
    ) -> Result<WriteGuard<'_, T>, StillRead> {
        self.write_unless(true, expired)
    }

    /// The write; when `bounded`, it gives up as soon as `expired()` says
    /// so while it waits (for another writer, or for readers).
    fn write_unless(
        &self,
        bounded: bool,
        mut expired: impl FnMut() -> bool,
    ) -> Result<WriteGuard<'_, T>, StillRead> {
        // A writer that panicked left the value whole (writes replace it in
        // one step), so a poisoned lock is taken as it is. With a deadline,
        // the wait for another writer (itself waiting for a reader that
        // does not leave) counts against it too.
        let writers = if !bounded {
            self.writers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        } else {
            let mut backoff = Backoff::default();
            loop {
                match self.writers.try_lock() {
                    Ok(guard) => break guard,
                    Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) if expired() => {
                        return Err(StillRead {
                            readers: self.readers.sum(),
                        })
                    }
                    Err(std::sync::TryLockError::WouldBlock) => backoff.wait(),
                }
            }
        };
        self.writing.store(true, SeqCst);
        let mut backoff = Backoff::default();
        loop {
            let readers = self.readers.sum();
            if readers == 0 {
                break;
            }
            if expired() {
                self.writing.store(false, SeqCst);
                return Err(StillRead { readers });
            }
            backoff.wait();
        }
        Ok(WriteGuard {
            lock: self,
            _writers: writers,
            #[cfg(loom)]
            access: Some(self.value.get_mut()),
        })
    }
}

/// [`ReadMostly::try_write_for`] gave up: readers were still counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StillRead {
    /// How many (a sum of the stripes at that moment).
    pub readers: usize,
}

/// [`ReadMostly::write_across_fork`]: a write held from a fork's prepare
/// handler to its end, in the parent and in the child.
pub struct ForkWriteGuard<'a, T> {
    guard: WriteGuard<'a, T>,
    /// The process that took it: dropped in another one, it is a fork child.
    pid: u32,
}

impl<T> ReadMostly<T> {
    /// [`Self::write`] for a `pthread_atfork` prepare handler, dropped by
    /// the parent and child handlers. In the child it also clears the
    /// reader counts: a reader of another thread that counted itself after
    /// the writer's wait, saw `writing` and was about to back out when
    /// `fork` copied the process, left a count the child would keep
    /// forever (no such thread there), and every later write in the child
    /// would wait for it. The child has one thread, which holds this write:
    /// no reader is real.
    pub fn write_across_fork(&self) -> ForkWriteGuard<'_, T> {
        ForkWriteGuard {
            guard: self.write(),
            pid: std::process::id(),
        }
    }
}

impl<T> Drop for ForkWriteGuard<'_, T> {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            self.guard.lock.readers.reset();
        }
    }
}

/// Yield first, then sleep: a writer may wait for a reader in a long
/// kernel (a plugin's deinit at exit while another thread computes).
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        #[cfg(not(loom))]
        if self.0 >= 64 {
            std::thread::sleep(std::time::Duration::from_micros(50));
            return;
        }
        self.0 += 1;
        yield_now();
    }
}

impl<T> std::ops::Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        #[cfg(loom)]
        // SAFETY: a counted reader with no writer (checked after counting):
        // no `&mut T` exists until this guard is dropped.
        return unsafe { self.access.as_ref().expect("live until drop").deref() };
        #[cfg(not(loom))]
        // SAFETY: as above.
        unsafe {
            &*self.lock.value.get()
        }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        #[cfg(loom)]
        drop(self.access.take());
        self.lock.readers.sub(self.stripe, 1);
    }
}

impl<T> std::ops::Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        #[cfg(loom)]
        // SAFETY: the only writer, and no reader is counted.
        return unsafe { &*self.access.as_ref().expect("live until drop").deref() };
        #[cfg(not(loom))]
        // SAFETY: the only writer, and no reader is counted.
        unsafe {
            &*self.lock.value.get()
        }
    }
}

impl<T> std::ops::DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        #[cfg(loom)]
        // SAFETY: the only writer, and no reader is counted.
        return unsafe { self.access.as_ref().expect("live until drop").deref() };
        #[cfg(not(loom))]
        // SAFETY: the only writer, and no reader is counted.
        unsafe {
            &mut *self.lock.value.get()
        }
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    fn drop(&mut self) {
        #[cfg(loom)]
        drop(self.access.take());
        self.lock.writing.store(false, SeqCst);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    fn me() -> usize {
        thread_local!(static MARK: u8 = const { 0 });
        MARK.with(|m| m as *const u8 as usize)
    }

    #[test]
    fn readers_share_and_a_writer_waits_for_them() {
        let lock = ReadMostly::new(1);
        let a = lock.read(me());
        let b = lock.read(me() + 64);
        assert_eq!(*a + *b, 2);
        let wrote = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                *lock.write() = 5;
                wrote.store(1, Relaxed);
            });
            // Until the writer announced itself: from then on it can only
            // wait for the two readers (no sleep a loaded machine outlasts).
            // A writer that does not wait may come and go unseen: then it
            // wrote, and the assertion fails instead of this loop hanging.
            while !lock.writing.load(SeqCst) && wrote.load(Relaxed) == 0 {
                std::thread::yield_now();
            }
            assert_eq!(wrote.load(Relaxed), 0, "the writer did not wait");
            drop(a);
            drop(b);
        });
        assert_eq!(*lock.read(me()), 5);
    }

    /// A bounded write with a reader that does not leave gives up, writes
    /// nothing, and lets the readers it held back meanwhile go on; once the
    /// reader leaves, a write succeeds.
    #[test]
    fn a_bounded_write_gives_up_on_a_reader_that_stays() {
        use std::sync::mpsc::channel;
        use std::time::Duration;
        let lock = ReadMostly::new(1);
        let (entered_tx, entered_rx) = channel();
        let (leave_tx, leave_rx) = channel::<()>();
        let (later_tx, later_rx) = channel();
        let lock = &lock;
        // Set once the writer gave up: a scheduler that kept the late
        // reader off the CPU for the whole wait must not hang the test.
        let gave_up = &AtomicUsize::new(0);
        std::thread::scope(|s| {
            // A reader "in a kernel" until told to leave.
            s.spawn(move || {
                let guard = lock.read(me());
                entered_tx.send(()).unwrap();
                leave_rx.recv().unwrap();
                drop(guard);
            });
            entered_rx.recv().unwrap();
            // A reader arriving while the writer waits is held back, and
            // reads the old value once the writer gives up.
            let failed = s.spawn(move || lock.try_write_for(Duration::from_millis(300)).err());
            s.spawn(move || {
                while !lock.writing.load(SeqCst) && gave_up.load(Relaxed) == 0 {
                    std::thread::yield_now();
                }
                later_tx.send(*lock.read(me() + 64)).unwrap();
            });
            assert_eq!(failed.join().unwrap(), Some(StillRead { readers: 1 }));
            gave_up.store(1, Relaxed);
            assert_eq!(later_rx.recv().unwrap(), 1, "the held-back reader read");
            assert!(!lock.writing.load(SeqCst));
            leave_tx.send(()).unwrap();
        });
        *lock
            .try_write_for(Duration::from_millis(300))
            .expect("no reader left") = 7;
        assert_eq!(*lock.read(me()), 7);
    }

    /// A thread that writes while it reads would wait for itself forever
    /// with `write`; the bounded write returns.
    #[test]
    fn a_bounded_write_under_its_own_read_returns() {
        let lock = ReadMostly::new(0);
        let guard = lock.read(me());
        let result = lock.try_write_for(std::time::Duration::from_millis(50));
        assert_eq!(result.err(), Some(StillRead { readers: 1 }));
        assert_eq!(*guard, 0);
    }

    /// A reader of another thread that counted itself and was backing out
    /// (it saw `writing`) when `fork` copied the process: the child drops
    /// the fork's write and can write again, though that thread is not
    /// there to take its count back.
    #[test]
    fn a_fork_child_does_not_wait_for_a_reader_it_does_not_have() {
        let lock = ReadMostly::new(0u32);
        let held = lock.write_across_fork();
        // The other thread's count between its add and its sub.
        let stripe = StripedCounts::stripe_of(me() + 1);
        lock.readers.add(stripe, 1);
        // SAFETY: the child only drops the guard, writes through the lock
        // (no allocation, no other lock) and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            drop(held);
            *lock.write() = 1;
            // SAFETY: ends the child without running the test harness's
            // atexit handlers.
            unsafe { libc::_exit(if *lock.read(me()) == 1 { 0 } else { 2 }) };
        }
        lock.readers.sub(stripe, 1); // the parent's thread backs out
        drop(held);
        let mut status = 0;
        // Hang detection only: the child ends at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            // SAFETY: `pid` is our child; `status` is writable.
            let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if waited == pid {
                break;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: our child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the fork child hung on a write");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(*lock.read(me()), 0, "the parent's value is its own");
    }

    #[test]
    fn many_threads_never_see_a_half_write() {
        let lock = ReadMostly::new((0u64, 0u64));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        let v = lock.read(me());
                        assert_eq!(v.0, v.1, "a read saw a write in progress");
                    }
                });
            }
            for i in 1..=200 {
                let mut w = lock.write();
                w.0 = i;
                std::hint::black_box(&mut *w);
                w.1 = i;
            }
        });
        assert_eq!(*lock.read(me()), (200, 200));
    }
}
