//! Queues (`ol_queue_handle_t`): work done in the order it was queued.
//!
//! * While a queue is idle (nothing queued, nothing running), an
//!   operation runs at once on the calling thread, before its call
//!   returns, as LLVM's host plugin runs its work: the common case (a copy,
//!   a fill or a launch on a queue no host function holds up) costs two
//!   atomic operations and allocates nothing.
//! * Work that may wait for the program (a host function, a wait for
//!   another queue's event), and whatever is queued behind work still
//!   waiting or running, goes to the queue's worker: one thread per queue,
//!   started at its first such work, that runs it in order. Its failures
//!   are kept, and each is reported once by an `olSyncQueue` after it, the
//!   oldest first (and by `olSyncEvent` of an event after it), as a GPU's
//!   asynchronous errors are.
//! * An event is a position in its queue: complete when the worker has
//!   finished the work queued before it. Work that ran at once is done
//!   before the event can be made.
//! * `olDestroyQueue` never waits: the worker finishes what is queued and
//!   ends; the queue's events stay valid ([`Lane::close_after_drain`]).
//! * The end ([`Lane::stop`]): the last `olShutDown` first waits until
//!   every queue has done its work, then ends the idle workers and joins
//!   them. At exit, queued work that has not started is dropped, as the
//!   process ends; a worker still inside the program's code (a host
//!   function that blocks) is left to the OS and reported.
//! * Threads: the worker holds no lock while it runs work. Waits (the
//!   worker's, `olSyncQueue`'s, `olSyncEvent`'s) happen outside the
//!   session's gate, so a fork never waits for them; a queue made before a
//!   `fork` is its parent's, and the child gets `OL_ERRC_INVALID_QUEUE`
//!   for it (its worker does not exist there, and its lock may have been
//!   held by another thread at the fork).

use super::errors::{ol_error, Errc, OlError, Outcome, INTERNAL};
use crate::session::lifecycle::forks_seen;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Work the worker runs later: everything it uses is its own.
pub(crate) type Work = Box<dyn FnOnce() -> Outcome + Send>;

/// [`Lane::word`]: an operation runs on a calling thread.
const AT_ONCE: u32 = 1;
/// [`Lane::word`]: the worker has work (queued or running).
const WORKER_HAS_WORK: u32 = 2;

thread_local! {
    /// The lane whose worker this thread is (its address; 0 for none; no
    /// destructor).
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

/// Run one piece of queued work on the worker: a panic is reported and
/// becomes the work's failure; work that ends its thread (`pthread_exit`
/// or cancellation in a host function, in a kernel, or in a call it makes)
/// does not end the worker: that exit is dropped (glibc's "exiting" flag
/// stays set on the worker, so it cannot be cancelled again; the exit's
/// cleanup handlers have run), and the work failed.
fn run_work(work: Work) -> Outcome {
    let mut outcome = Err(&INTERNAL);
    // The work's frames (a host function, the program's kernel, an entry
    // of ours whose boundary resumes an exit) end inside this interception
    // if the thread exits: the exit stops here, not in std's thread start,
    // where a foreign unwind aborts the process.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        omptarget_thread_exit::call_intercepting_exit(|| outcome = work()).is_err()
    }));
    let exited = match caught {
        Ok(exited) => exited,
        Err(payload) => {
            crate::boundary::report_panic("a queued ol* operation", payload.as_ref());
            false
        }
    };
    // An exit intercepted deeper (a launch's own) and left for this frame.
    if exited || omptarget_thread_exit::take_pending().is_some() {
        return Err(ol_error!(
            Errc::BackendFailure,
            "queued work ended its thread (pthread_exit or cancellation); a queue's worker does not end"
        ));
    }
    outcome
}

/// What the worker is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Worker {
    /// Not started: nothing was ever queued.
    None,
    /// Waiting for work (or for an operation running at once to end).
    Idle,
    /// Running queued work.
    Busy,
    /// Ended.
    Gone,
}

/// Whether the queue still takes work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closing {
    Open,
    /// Destroyed: the worker ends once what is queued is done.
    Drain,
    /// The end: the worker drops what has not started and ends.
    Abandon,
}

/// What [`Lane::stop`] did with the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// There was none, or it ended and was joined.
    Joined,
    /// It was running work (the program's code, or a wait for it): told
    /// to end after it and left running.
    LeftRunning,
    /// The queue is the parent process's (made before a fork): untouched.
    Parents,
}

struct Inner {
    pending: VecDeque<Work>,
    /// Work queued for the worker so far, and how much of it has finished:
    /// an event made now is complete when `finished` reaches `queued`.
    queued: u64,
    finished: u64,
    /// Each queued work that failed (its position) and its error, until an
    /// `olSyncQueue` after it reports it.
    failures: VecDeque<(u64, &'static OlError)>,
    worker: Worker,
    thread: Option<JoinHandle<()>>,
    closing: Closing,
}

/// One queue's order of work (shared by its handle's record and its
/// events, which may outlive it).
pub(crate) struct Lane {
    /// [`AT_ONCE`] and [`WORKER_HAS_WORK`]: zero is idle. An operation runs
    /// at once only by turning zero into `AT_ONCE`.
    word: AtomicU32,
    /// `Inner::failures` is not empty (read without the lock by
    /// [`Lane::is_settled`]).
    failed: AtomicBool,
    inner: Mutex<Inner>,
    changed: Condvar,
    /// [`forks_seen`] when it was made: another value is a child's view of
    /// a parent's queue.
    generation: u64,
}

static PARENTS: OlError = OlError::new(
    Errc::InvalidQueue,
    "the queue was made before fork(): it is the parent process's\0",
);

impl Lane {
    pub(crate) fn new() -> Arc<Lane> {
        Arc::new(Lane {
            word: AtomicU32::new(0),
            failed: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                pending: VecDeque::new(),
                queued: 0,
                finished: 0,
                failures: VecDeque::new(),
                worker: Worker::None,
                thread: None,
                closing: Closing::Open,
            }),
            changed: Condvar::new(),
            generation: forks_seen(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        self.changed.wait(inner).unwrap_or_else(|e| e.into_inner())
    }

    /// Fails for a parent's queue in a fork child.
    fn this_process(&self) -> Outcome {
        if self.generation == forks_seen() {
            Ok(())
        } else {
            Err(&PARENTS)
        }
    }

    /// Whether it was made in this process (not before a fork, in a child).
    pub(crate) fn is_this_process(&self) -> bool {
        self.this_process().is_ok()
    }

    /// Run `now` at once if the queue is idle (its outcome is the call's);
    /// otherwise queue `later()`'s work behind what is there.
    pub(crate) fn submit(
        self: &Arc<Self>,
        now: impl FnOnce() -> Outcome,
        later: impl FnOnce() -> Work,
    ) -> Outcome {
        self.this_process()?;
        let idle = self
            .word
            .compare_exchange(0, AT_ONCE, Ordering::Acquire, Ordering::Relaxed);
        if idle.is_err() {
            return self.enqueue(later());
        }
        // Ends the operation even if `now` unwinds (the boundary above
        // catches it), so that the queue does not stay busy for ever.
        struct Done<'a>(&'a Lane);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.finish_at_once();
            }
        }
        let _done = Done(self);
        now()
    }

    /// The end of an operation run at once: back to idle, or, if work was
    /// queued meanwhile, wake the worker that waits for it.
    fn finish_at_once(&self) {
        if self.generation != forks_seen() {
            // The operation forked and this is the child: the parent's
            // queue and lock are not touched.
            return;
        }
        let alone = self
            .word
            .compare_exchange(AT_ONCE, 0, Ordering::Release, Ordering::Relaxed);
        if alone.is_err() {
            let inner = self.lock();
            self.word.fetch_and(!AT_ONCE, Ordering::Release);
            drop(inner);
            self.changed.notify_all();
        }
    }

    /// Queue `work` for the worker, starting it if it is not yet.
    pub(crate) fn enqueue(self: &Arc<Self>, work: Work) -> Outcome {
        self.this_process()?;
        let mut inner = self.lock();
        if inner.closing != Closing::Open {
            return Err(ol_error!(Errc::InvalidQueue, "the queue is destroyed"));
        }
        if inner.worker == Worker::None {
            let lane = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("ol-queue".into())
                .spawn(move || lane.serve());
            match started {
                Ok(thread) => {
                    inner.thread = Some(thread);
                    inner.worker = Worker::Idle;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "starting a queue's worker");
                    return Err(ol_error!(
                        Errc::OutOfResources,
                        "the queue's worker thread could not be started (see the debug output)"
                    ));
                }
            }
        }
        self.word.fetch_or(WORKER_HAS_WORK, Ordering::Relaxed);
        inner.pending.push_back(work);
        inner.queued += 1;
        drop(inner);
        self.changed.notify_all();
        Ok(())
    }

    /// The worker: runs the queued work in order, each piece after the
    /// operation running at once (if any) has ended.
    fn serve(self: Arc<Self>) {
        WORKER_OF.with(|w| w.set(Arc::as_ptr(&self) as usize));
        let mut inner = self.lock();
        loop {
            if inner.closing == Closing::Abandon {
                break;
            }
            if inner.pending.is_empty() {
                self.word.fetch_and(!WORKER_HAS_WORK, Ordering::Release);
                if inner.closing == Closing::Drain {
                    break;
                }
                inner.worker = Worker::Idle;
                inner = self.wait(inner);
                continue;
            }
            // Queued work starts after the operation running at once (which
            // wakes the worker when it ends, since work is queued).
            if self.word.load(Ordering::Acquire) & AT_ONCE != 0 {
                inner.worker = Worker::Idle;
                inner = self.wait(inner);
                continue;
            }
            let work = inner.pending.pop_front().expect("not empty");
            inner.worker = Worker::Busy;
            drop(inner);
            let outcome = run_work(work);
            if self.generation != forks_seen() {
                // The work forked and this is the child: the queue, its lock
                // and its work are the parent's, and this thread has nothing
                // to go back to. The child ends here, as a fork child that
                // must not run its parent's code does: `_exit`, so that
                // neither the parent's buffered output nor its exit
                // handlers (our teardown of the parent's runtime) run twice.
                // SAFETY: `_exit` has no precondition.
                unsafe { libc::_exit(0) }
            }
            inner = self.lock();
            inner.finished += 1;
            if let Err(error) = outcome {
                let position = inner.finished;
                inner.failures.push_back((position, error));
                self.failed.store(true, Ordering::Release);
            }
            self.changed.notify_all();
        }
        inner.worker = Worker::Gone;
        let dropped = std::mem::take(&mut inner.pending);
        drop(inner);
        // The unrun work's captures are freed outside the lock.
        drop(dropped);
        self.changed.notify_all();
    }

    /// The position an event made now stands for.
    pub(crate) fn mark(&self) -> Outcome<u64> {
        self.this_process()?;
        Ok(self.lock().queued)
    }

    /// Whether the work before `position` is done.
    pub(crate) fn is_done(&self, position: u64) -> Outcome<bool> {
        self.this_process()?;
        Ok(self.lock().finished >= position)
    }

    /// Whether nothing is queued or running.
    pub(crate) fn is_empty(&self) -> Outcome<bool> {
        self.this_process()?;
        let inner = self.lock();
        Ok(inner.finished == inner.queued && self.word.load(Ordering::Acquire) == 0)
    }

    /// Wait until the work before `position` is done; the lock, held, for
    /// the caller's look at the failures. Call outside the session's gate.
    fn wait_until(&self, position: u64) -> Outcome<MutexGuard<'_, Inner>> {
        self.this_process()?;
        let mut inner = self.lock();
        if inner.finished < position
            && WORKER_OF.with(Cell::get) == std::ptr::from_ref(self) as usize
        {
            return Err(ol_error!(
                Errc::InvalidQueue,
                "work of a queue waits for the queue itself: it would wait for ever"
            ));
        }
        while inner.finished < position {
            if inner.worker == Worker::Gone {
                drop(inner);
                // Dropped by the close at exit: a thread other than the
                // exiting one must not fail then (the process is ending
                // with the exiting thread's status); it parks, as the
                // session's other late calls do.
                crate::session::lifecycle::park_if_closed_by_another_thread();
                return Err(ol_error!(
                    Errc::InvalidQueue,
                    "the queue's work was dropped unrun (olShutDown or exit)"
                ));
            }
            inner = self.wait(inner);
        }
        Ok(inner)
    }

    /// Wait until the work before `position` is done (`olSyncEvent`); the
    /// oldest failure among it not yet reported by a sync, if any (left
    /// for the sync to report).
    pub(crate) fn wait_for(&self, position: u64) -> Outcome {
        let inner = self.wait_until(position)?;
        match inner.failures.front() {
            Some(&(at, error)) if at <= position => Err(error),
            _ => Ok(()),
        }
    }

    /// Whether nothing left to the worker is unfinished or unreported:
    /// idle, no failure kept, and this process's queue. Then `olSyncQueue`
    /// has nothing to wait for or report (three atomic loads, no lock).
    pub(crate) fn is_settled(&self) -> bool {
        self.word.load(Ordering::Acquire) == 0
            && !self.failed.load(Ordering::Acquire)
            && self.this_process().is_ok()
    }

    /// `olSyncQueue`: wait for everything queued so far; the oldest failure
    /// not yet reported, reported once.
    pub(crate) fn sync(&self) -> Outcome {
        let position = self.mark()?;
        // The oldest failure before the mark is reported now, once, under
        // the lock the wait ended with (two syncs at once report two
        // failures, never one twice); a later one is the next sync's. A
        // wait that fails itself reports no failure of the work.
        let mut inner = self.wait_until(position)?;
        match inner.failures.front() {
            Some(&(at, error)) if at <= position => {
                inner.failures.pop_front();
                self.failed
                    .store(!inner.failures.is_empty(), Ordering::Release);
                Err(error)
            }
            _ => Ok(()),
        }
    }

    /// `olDestroyQueue`: take no more work; the worker ends once what is
    /// queued is done. Never waits.
    pub(crate) fn close_after_drain(&self) {
        if self.this_process().is_err() {
            return;
        }
        let mut inner = self.lock();
        if inner.closing == Closing::Open {
            inner.closing = Closing::Drain;
        }
        drop(inner);
        self.changed.notify_all();
    }

    /// Whether the worker has ended or never started (its thread can be
    /// joined at once).
    pub(crate) fn is_finished(&self) -> bool {
        self.this_process().is_err() || matches!(self.lock().worker, Worker::None | Worker::Gone)
    }

    /// The end: unrun work is dropped, an idle worker ends and is joined,
    /// one running work is told to end after it and left running.
    pub(crate) fn stop(&self) -> Stopped {
        if self.this_process().is_err() {
            return Stopped::Parents;
        }
        let mut inner = self.lock();
        inner.closing = Closing::Abandon;
        let busy = inner.worker == Worker::Busy;
        let thread = inner.thread.take();
        drop(inner);
        self.changed.notify_all();
        match thread {
            // Dropping the handle detaches the thread: it ends by itself
            // after its work, or with the process.
            Some(_) if busy => Stopped::LeftRunning,
            Some(thread) => {
                if thread.join().is_err() {
                    tracing::debug!("a queue's worker panicked");
                }
                tracing::debug!("a queue's worker ended and was joined");
                Stopped::Joined
            }
            None => Stopped::Joined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// Queue work that waits until the returned sender sends.
    fn hold_back(lane: &Arc<Lane>) -> std::sync::mpsc::Sender<()> {
        let (go, gate) = std::sync::mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        lane.enqueue(Box::new(move || {
            gate.lock().unwrap().recv().unwrap();
            Ok(())
        }))
        .unwrap();
        go
    }

    /// Run an operation at once on another thread, which stays inside it
    /// (then runs `last`) until the returned sender sends.
    fn run_at_once(
        lane: &Arc<Lane>,
        last: impl FnOnce() + Send + 'static,
    ) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let (inside, entered) = std::sync::mpsc::channel::<()>();
        let (go, gate) = std::sync::mpsc::channel::<()>();
        let other = Arc::clone(lane);
        let at_once = std::thread::spawn(move || {
            other
                .submit(
                    || {
                        inside.send(()).unwrap();
                        gate.recv().unwrap();
                        last();
                        Ok(())
                    },
                    || unreachable!("idle"),
                )
                .unwrap()
        });
        entered.recv().unwrap();
        (go, at_once)
    }

    fn record(log: &Arc<Mutex<Vec<u32>>>, n: u32) -> Work {
        let log = Arc::clone(log);
        Box::new(move || {
            log.lock().unwrap().push(n);
            Ok(())
        })
    }

    #[test]
    fn an_idle_queue_runs_work_at_once_and_starts_no_thread() {
        let lane = Lane::new();
        let ran = AtomicUsize::new(0);
        lane.submit(
            || {
                ran.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
            || unreachable!("idle: no work is queued"),
        )
        .unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 1);
        assert!(lane.is_finished(), "no worker was started");
        assert!(lane.is_empty().unwrap());
        assert_eq!(lane.stop(), Stopped::Joined);
    }

    #[test]
    fn work_behind_a_blocked_function_waits_for_it_and_runs_in_order() {
        let lane = Lane::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let go = hold_back(&lane);
        let event = lane.mark().unwrap();
        for n in 0..3 {
            let log2 = Arc::clone(&log);
            lane.submit(
                move || {
                    log2.lock().unwrap().push(100);
                    Ok(())
                },
                || record(&log, n),
            )
            .unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(log.lock().unwrap().is_empty(), "nothing ran past the block");
        assert!(!lane.is_done(event).unwrap());
        assert!(!lane.is_empty().unwrap());
        go.send(()).unwrap();
        lane.wait_for(event).unwrap();
        lane.sync().unwrap();
        assert_eq!(*log.lock().unwrap(), [0, 1, 2]);
        assert!(lane.is_empty().unwrap());
        assert_eq!(lane.stop(), Stopped::Joined);
    }

    #[test]
    fn each_queued_failure_is_reported_once_by_a_sync_after_it() {
        let lane = Lane::new();
        static FAILED: OlError = OlError::new(Errc::BackendFailure, "test\0");
        static AGAIN: OlError = OlError::new(Errc::InvalidArgument, "again\0");
        let go = hold_back(&lane);
        lane.enqueue(Box::new(|| Err(&FAILED))).unwrap();
        let event = lane.mark().unwrap();
        lane.enqueue(Box::new(|| Ok(()))).unwrap();
        go.send(()).unwrap();
        assert!(std::ptr::eq(lane.wait_for(event).unwrap_err(), &FAILED));
        assert!(std::ptr::eq(lane.sync().unwrap_err(), &FAILED));
        assert!(lane.is_settled(), "reported");
        lane.sync().unwrap();
        // Two failures: each sync reports the ones before it, the first
        // first; none is lost.
        let go = hold_back(&lane);
        lane.enqueue(Box::new(|| Err(&FAILED))).unwrap();
        let between = lane.mark().unwrap();
        lane.enqueue(Box::new(|| Err(&AGAIN))).unwrap();
        go.send(()).unwrap();
        lane.wait_for(lane.mark().unwrap()).unwrap_err();
        assert!(std::ptr::eq(lane.wait_for(between).unwrap_err(), &FAILED));
        assert!(std::ptr::eq(lane.sync().unwrap_err(), &FAILED));
        assert!(!lane.is_settled(), "the second is still to report");
        assert!(std::ptr::eq(lane.sync().unwrap_err(), &AGAIN));
        lane.sync().unwrap();
        lane.stop();
    }

    /// Threads submitting at once and queueing on one queue, together:
    /// no two operations ever overlap (an operation run at once never
    /// runs beside queued work), every one runs, and a sync sees them all.
    /// A race test: with the worker's wait for an operation running at once
    /// taken out, it failed in one run of four here (it cannot fail on the
    /// real protocol).
    #[test]
    fn operations_at_once_and_queued_never_overlap_and_all_run() {
        let lane = Lane::new();
        let active = Arc::new(AtomicUsize::new(0));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let op = {
            let (active, overlaps, ran) = (active.clone(), overlaps.clone(), ran.clone());
            move || {
                if active.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                // Long enough for another thread to queue work meanwhile
                // and for a woken worker to start (tens of microseconds).
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_micros(100) {
                    std::hint::spin_loop();
                }
                active.fetch_sub(1, Ordering::SeqCst);
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        let threads: Vec<_> = (0..4)
            .map(|t: u32| {
                let (lane, op) = (Arc::clone(&lane), op.clone());
                std::thread::spawn(move || {
                    for i in 0..1500u32 {
                        let op = op.clone();
                        // Queued work now and then, and a sync every
                        // fourth operation, so that the queue drains and
                        // operations run at once between queued ones.
                        if i % 4 == 3 {
                            lane.sync().unwrap();
                        }
                        if (i + t).is_multiple_of(8) {
                            lane.enqueue(Box::new(move || {
                                op();
                                Ok(())
                            }))
                            .unwrap();
                        } else {
                            let later = op.clone();
                            lane.submit(
                                || {
                                    op();
                                    Ok(())
                                },
                                || {
                                    Box::new(move || {
                                        later();
                                        Ok(())
                                    })
                                },
                            )
                            .unwrap();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        lane.sync().unwrap();
        assert_eq!(overlaps.load(Ordering::SeqCst), 0, "operations overlapped");
        assert_eq!(ran.load(Ordering::SeqCst), 6000);
        assert!(lane.is_empty().unwrap());
        assert_eq!(lane.stop(), Stopped::Joined);
    }

    #[test]
    fn a_refused_wait_reports_no_failure_and_loses_none() {
        static FAILED: OlError = OlError::new(Errc::BackendFailure, "test\0");
        let lane = Lane::new();
        lane.enqueue(Box::new(|| Err(&FAILED))).unwrap();
        let inner = Arc::clone(&lane);
        let (told, answer) = std::sync::mpsc::channel();
        lane.enqueue(Box::new(move || {
            let refused = inner.sync().unwrap_err();
            told.send(std::ptr::eq(refused, &FAILED)).unwrap();
            Ok(())
        }))
        .unwrap();
        assert!(!answer.recv().unwrap(), "the refusal, not the failure");
        assert!(std::ptr::eq(lane.sync().unwrap_err(), &FAILED), "kept");
        lane.sync().unwrap();
        lane.stop();
    }

    #[test]
    fn two_syncs_at_once_report_two_failures_once_each() {
        static ONE: OlError = OlError::new(Errc::BackendFailure, "one\0");
        static TWO: OlError = OlError::new(Errc::InvalidArgument, "two\0");
        for _ in 0..20 {
            let lane = Lane::new();
            let go = hold_back(&lane);
            lane.enqueue(Box::new(|| Err(&ONE))).unwrap();
            lane.enqueue(Box::new(|| Err(&TWO))).unwrap();
            let syncs: Vec<_> = (0..2)
                .map(|_| {
                    let lane = Arc::clone(&lane);
                    std::thread::spawn(move || lane.sync().unwrap_err() as *const OlError as usize)
                })
                .collect();
            go.send(()).unwrap();
            let mut got: Vec<usize> = syncs.into_iter().map(|t| t.join().unwrap()).collect();
            got.sort();
            let mut want = vec![
                &ONE as *const OlError as usize,
                &TWO as *const OlError as usize,
            ];
            want.sort();
            assert_eq!(got, want);
            lane.sync().unwrap();
            lane.stop();
        }
    }

    #[test]
    fn a_destroyed_queue_with_nothing_queued_ends_its_worker_while_an_operation_runs_at_once() {
        let lane = Lane::new();
        lane.enqueue(Box::new(|| Ok(()))).unwrap();
        lane.sync().unwrap();
        let (go, at_once) = run_at_once(&lane, || {});
        lane.close_after_drain();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !lane.is_finished() {
            assert!(std::time::Instant::now() < deadline, "the worker waited");
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        at_once.join().unwrap();
        assert_eq!(lane.stop(), Stopped::Joined);
    }

    #[test]
    fn a_destroyed_queue_finishes_its_work_and_its_events_stay_valid() {
        let lane = Lane::new();
        let go = hold_back(&lane);
        let event = lane.mark().unwrap();
        lane.close_after_drain();
        assert!(lane.enqueue(Box::new(|| Ok(()))).is_err());
        go.send(()).unwrap();
        lane.wait_for(event).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !lane.is_finished() {
            assert!(
                std::time::Instant::now() < deadline,
                "the worker never ended"
            );
            std::thread::yield_now();
        }
        assert_eq!(lane.stop(), Stopped::Joined);
    }

    #[test]
    fn the_end_drops_unrun_work_and_leaves_a_busy_worker() {
        let lane = Lane::new();
        let (go, gate) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        lane.enqueue(Box::new(move || {
            started.send(()).unwrap();
            gate.lock().unwrap().recv().unwrap();
            Ok(())
        }))
        .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let ran2 = Arc::clone(&ran);
        lane.enqueue(Box::new(move || {
            ran2.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }))
        .unwrap();
        let last = lane.mark().unwrap();
        running.recv().unwrap();
        assert_eq!(lane.stop(), Stopped::LeftRunning);
        go.send(()).unwrap();
        assert!(lane.wait_for(last).is_err(), "the second work was dropped");
        assert_eq!(ran.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn work_of_a_queue_cannot_wait_for_its_own_queue() {
        let lane = Lane::new();
        let inner = Arc::clone(&lane);
        let (told, answer) = std::sync::mpsc::channel();
        lane.enqueue(Box::new(move || {
            let position = inner.mark().unwrap();
            told.send(inner.wait_for(position).is_err()).unwrap();
            Ok(())
        }))
        .unwrap();
        assert!(answer.recv().unwrap(), "refused, not a hang");
        lane.sync().unwrap();
        lane.stop();
    }

    #[test]
    fn work_queued_while_an_operation_runs_at_once_waits_for_it() {
        let lane = Lane::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = Arc::clone(&log);
        let (go, at_once) = run_at_once(&lane, move || log2.lock().unwrap().push(1));
        lane.submit(|| unreachable!("busy"), || record(&log, 2))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        go.send(()).unwrap();
        at_once.join().unwrap();
        lane.sync().unwrap();
        assert_eq!(*log.lock().unwrap(), [1, 2]);
        lane.stop();
    }
}
