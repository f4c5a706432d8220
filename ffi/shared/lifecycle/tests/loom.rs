//! The loom model of the shim's lifecycle (`RUSTFLAGS="--cfg loom" cargo
//! test -p omptarget-lifecycle --test loom`; a step of `cargo
//! xtask test`). Every interleaving of the threads below is explored.
//!
//! The session is a model of what the shim's session guards: a plugin that
//! is deinitialised by a full teardown, and a count of its frees. Checked:
//! * nothing is freed twice (a session is torn down at most once, and the
//!   drop count equals the creation count at the end);
//! * no call reaches a plugin after its deinit (a reader never sees it);
//! * exit never waits for a thread that cannot finish (a reader that never
//!   leaves, as a thread blocked in a kernel: `close` still returns).
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::thread;
use omptarget_lifecycle::{Closing, Entered, Lifecycle};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// Every interleaving with up to 3 preemptions (loom's advice for models
/// of this size: the bugs it finds need few).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Counts of sessions created and dropped across a model run.
#[derive(Default)]
struct Counts {
    created: AtomicUsize,
    dropped: AtomicUsize,
    torn_down: AtomicUsize,
}

struct Session {
    counts: Arc<Counts>,
    plugin_deinit: AtomicBool,
}

impl Session {
    fn new(counts: &Arc<Counts>) -> Box<Session> {
        counts.created.fetch_add(1, SeqCst);
        Box::new(Session {
            counts: counts.clone(),
            plugin_deinit: AtomicBool::new(false),
        })
    }

    /// A call into the plugin: must never happen after its deinit.
    fn call_plugin(&self) {
        assert!(
            !self.plugin_deinit.load(SeqCst),
            "a call reached a deinitialised plugin"
        );
    }

    fn full_teardown(self: Box<Self>) {
        assert!(!self.plugin_deinit.swap(true, SeqCst), "torn down twice");
        self.counts.torn_down.fetch_add(1, SeqCst);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.counts.dropped.fetch_add(1, SeqCst);
    }
}

/// Close as the shim does at exit: a full teardown when idle; when in use,
/// a partial one (no deinit) now and the rest once the readers are gone.
fn close(lc: &Lifecycle<Session>, me: usize, own: usize) {
    match lc.close(me, own) {
        Closing::Idle(s) => s.full_teardown(),
        Closing::InUse { session, .. } => session.into_iter().for_each(Session::call_plugin), // drain caches only
        Closing::AlreadyClosed | Closing::Empty => {}
    }
}

fn finish(lc: &Lifecycle<Session>, counts: &Counts) {
    // SAFETY: `close` above dropped its `InUse` before returning.
    if let Some(s) = unsafe { lc.finish_left() } {
        s.full_teardown();
    }
    // Everything created was torn down exactly once or dropped unused.
    assert_eq!(counts.created.load(SeqCst), counts.dropped.load(SeqCst));
    assert!(counts.torn_down.load(SeqCst) <= 1);
}

/// API calls racing each other's session creation and an exit on a third
/// thread.
#[test]
fn calls_racing_creation_and_exit() {
    model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let callers: Vec<_> = (1..=2)
            .map(|me| {
                let (lc, counts) = (lc.clone(), counts.clone());
                thread::spawn(move || {
                    if let Entered::Open(reader) = lc.enter(me, true, || Session::new(&counts)) {
                        reader.call_plugin();
                    }
                })
            })
            .collect();
        close(&lc, 3, 0);
        for c in callers {
            c.join().unwrap();
        }
        finish(&lc, &counts);
    });
}

/// Registrations and unregistrations are calls like any other (they enter
/// as readers): two of them in sequence on one thread, racing an exit and
/// an allocation-and-free on another.
#[test]
fn registrations_and_frees_racing_exit() {
    model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let registrar = {
            let (lc, counts) = (lc.clone(), counts.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    if let Entered::Open(r) = lc.enter(1, true, || Session::new(&counts)) {
                        r.call_plugin();
                    }
                }
            })
        };
        let freer = {
            let (lc, counts) = (lc.clone(), counts.clone());
            thread::spawn(move || {
                if let Entered::Open(r) = lc.enter(2, true, || Session::new(&counts)) {
                    r.call_plugin(); // alloc
                    r.call_plugin(); // free
                }
            })
        };
        close(&lc, 3, 0);
        registrar.join().unwrap();
        freer.join().unwrap();
        finish(&lc, &counts);
    });
}

/// A thread that never leaves its call (blocked in a kernel) while another
/// exits: `close` returns (partial teardown), and the session is never torn
/// down under the blocked call.
#[test]
fn exit_never_waits_for_a_call_that_cannot_finish() {
    model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let entered = Arc::new(AtomicBool::new(false));
        let kernel = {
            let (lc, counts, entered) = (lc.clone(), counts.clone(), entered.clone());
            thread::spawn(move || {
                if let Entered::Open(r) = lc.enter(1, true, || Session::new(&counts)) {
                    entered.store(true, SeqCst);
                    r.call_plugin();
                    std::mem::forget(r); // never returns from the kernel
                }
            })
        };
        kernel.join().unwrap();
        let was_in = entered.load(SeqCst);
        let closed_in_use = matches!(lc.close(2, 0), Closing::InUse { .. });
        assert_eq!(was_in, closed_in_use);
        // SAFETY: the `InUse` was dropped by the `matches!` above.
        assert!(unsafe { lc.finish_left() }.is_none() || !was_in);
    });
}

/// `exit` called from inside a kernel: the closing thread's own call is in
/// flight, so the teardown is partial (its plugin is in use up its own
/// stack) while another thread's call races.
#[test]
fn exit_from_inside_a_call() {
    model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let other = {
            let (lc, counts) = (lc.clone(), counts.clone());
            thread::spawn(move || {
                if let Entered::Open(r) = lc.enter(2, true, || Session::new(&counts)) {
                    r.call_plugin();
                }
            })
        };
        if let Entered::Open(r) = lc.enter(1, true, || Session::new(&counts)) {
            match lc.close(1, 1) {
                Closing::InUse { own, .. } => assert_eq!(own, 1),
                _ => panic!("our own call is in flight"),
            }
            r.call_plugin();
            std::mem::forget(r); // exit() does not return
        }
        other.join().unwrap();
        // SAFETY: the `InUse` was dropped at the end of its `match`.
        assert!(
            unsafe { lc.finish_left() }.is_none(),
            "our own call never left"
        );
    });
}

/// The gate's waits are yield loops: more branches per execution, and
/// fewer preemptions keep the models quick.
fn fork_model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.max_branches = 100_000;
    builder.check(f);
}

/// One offload call on thread `me`: a runtime lock taken and released
/// before its kernel (map) and after it (unmap); `locked` counts holders.
fn offload_call(me: usize, lc: &Lifecycle<Session>, counts: &Arc<Counts>, locked: &AtomicUsize) {
    if let Entered::Open(r) = lc.enter(me, true, || Session::new(counts)) {
        locked.fetch_add(1, SeqCst); // map
        locked.fetch_sub(1, SeqCst);
        lc.kernel(me, || r.call_plugin());
        locked.fetch_add(1, SeqCst); // unmap
        locked.fetch_sub(1, SeqCst);
    }
}

/// A fork while another thread runs an offload call: between
/// `prepare_fork` and the fork's end, that thread holds no runtime lock (it
/// is in its kernel, or waiting at the gate, or not in the runtime), so the
/// child would inherit none held.
#[test]
fn fork_never_snapshots_a_lock_held_by_a_call() {
    fork_while_a_call_runs_on(1); // another stripe than the forker's
}

/// The same with the call counted in the forker's own stripe (ids 2 and 4
/// share one under the model): a stripe's count is the sum of both.
#[test]
fn fork_never_snapshots_a_lock_held_by_a_call_of_the_same_stripe() {
    fork_while_a_call_runs_on(4);
}

fn fork_while_a_call_runs_on(caller: usize) {
    fork_model(move || {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let locked = Arc::new(AtomicUsize::new(0));
        let busy = {
            let (lc, counts, locked) = (lc.clone(), counts.clone(), locked.clone());
            thread::spawn(move || offload_call(caller, &lc, &counts, &locked))
        };
        lc.prepare_fork(2, 0);
        assert_eq!(
            locked.load(SeqCst),
            0,
            "the child would inherit a held lock"
        );
        lc.after_fork_in_parent();
        busy.join().unwrap();
        close(&lc, 2, 0);
        finish(&lc, &counts);
    });
}

/// `fork()` from inside the forking thread's own kernel: it does not wait
/// for itself, and a call another thread starts meanwhile waits at the gate
/// instead of taking a lock.
#[test]
fn fork_from_inside_a_kernel_waits_for_nobody_in_a_kernel() {
    fork_model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let locked = Arc::new(AtomicUsize::new(0));
        let late = {
            let (lc, counts, locked) = (lc.clone(), counts.clone(), locked.clone());
            thread::spawn(move || offload_call(1, &lc, &counts, &locked))
        };
        if let Entered::Open(r) = lc.enter(2, true, || Session::new(&counts)) {
            lc.kernel(2, || {
                lc.prepare_fork(2, 0);
                assert_eq!(
                    locked.load(SeqCst),
                    0,
                    "the child would inherit a held lock"
                );
                lc.after_fork_in_parent();
            });
            r.call_plugin();
        }
        late.join().unwrap();
        close(&lc, 2, 0);
        finish(&lc, &counts);
    });
}

/// A call held at the fork gate while the forking thread finishes the fork
/// and then closes the runtime (it exits right after forking): released by
/// the fork's end, the call must see the close (it re-reads the flags after
/// its wait), never use the closed session, and the session is torn down
/// once. Dropping the re-read after the wait fails this model (review).
#[test]
fn a_call_held_at_the_fork_gate_sees_the_close_that_follows() {
    fork_model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let locked = Arc::new(AtomicUsize::new(0));
        // The session exists before the fork.
        if let Entered::Open(r) = lc.enter(2, true, || Session::new(&counts)) {
            r.call_plugin();
        }
        let held = {
            let (lc, counts, locked) = (lc.clone(), counts.clone(), locked.clone());
            thread::spawn(move || offload_call(1, &lc, &counts, &locked))
        };
        lc.prepare_fork(2, 0);
        lc.after_fork_in_parent();
        close(&lc, 2, 0);
        held.join().unwrap();
        finish(&lc, &counts);
    });
}

/// A registration (an ungated call, made from a library constructor with
/// the dynamic loader's lock held) during a fork whose thread needs that
/// lock before the fork ends: the registration must not wait at the gate,
/// or neither thread could go on. Gating registrations fails this model.
#[test]
fn a_registration_never_waits_at_the_fork_gate() {
    fork_model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        let loader = Arc::new(loom::sync::Mutex::new(()));
        let registering = {
            let (lc, counts, loader) = (lc.clone(), counts.clone(), loader.clone());
            thread::spawn(move || {
                let _loader = loader.lock().unwrap();
                if let Entered::Open(r) = lc.enter(1, false, || Session::new(&counts)) {
                    r.call_plugin();
                }
            })
        };
        lc.prepare_fork(2, 0);
        drop(loader.lock().unwrap());
        lc.after_fork_in_parent();
        registering.join().unwrap();
        close(&lc, 2, 0);
        finish(&lc, &counts);
    });
}

/// The forking thread calls the runtime between its prepare handler and
/// the fork's end (another library's fork handler, say): it passes its own
/// gate. Making the forker wait for itself fails this model.
#[test]
fn the_forking_thread_passes_its_own_gate() {
    fork_model(|| {
        let counts = Arc::new(Counts::default());
        let lc = Arc::new(Lifecycle::<Session>::new());
        lc.prepare_fork(2, 0);
        if let Entered::Open(r) = lc.enter(2, true, || Session::new(&counts)) {
            r.call_plugin();
        }
        lc.after_fork_in_parent();
        close(&lc, 2, 0);
        finish(&lc, &counts);
    });
}

type Pair = omptarget_lifecycle::ReadMostly<(usize, usize)>;

/// A thread reading the pair twice, on two stripes: it must never see one
/// half written.
fn spawn_pair_reader(lock: &Arc<Pair>) -> thread::JoinHandle<()> {
    let lock = lock.clone();
    thread::spawn(move || {
        for me in [1, 2] {
            let seen = *lock.read(me);
            assert!(seen == (0, 0) || seen == (1, 1), "a half write: {seen:?}");
        }
    })
}

/// [`ReadMostly`], the plugin kit's lock of a plugin's state: a reader
/// never overlaps a writer (loom's `UnsafeCell` reports any overlapping
/// access), and a write is never lost. One reader thread (its two reads on
/// two stripes) against the writer: a third thread's yield loops put the
/// model beyond loom's branch bound.
#[test]
fn read_mostly_never_lets_a_reader_overlap_a_writer() {
    fork_model(move || {
        let lock = Arc::new(omptarget_lifecycle::ReadMostly::new((0usize, 0usize)));
        let reader = spawn_pair_reader(&lock);
        {
            let mut w = lock.write();
            w.0 = 1;
            w.1 = 1;
        }
        reader.join().unwrap();
        assert_eq!(*lock.read(1), (1, 1));
    });
}

/// [`ReadMostly::try_write_unless`], the bounded write of a plugin's
/// deinit: whether it gives up at its first check, its second, or not at
/// all, a reader never overlaps its write, a reader held back by it goes
/// on once it gives up, and it writes only when it says so.
#[test]
fn a_bounded_write_that_gives_up_never_overlaps_a_reader() {
    for patience in [0usize, 1] {
        fork_model(move || {
            let lock = Arc::new(omptarget_lifecycle::ReadMostly::new((0usize, 0usize)));
            let reader = spawn_pair_reader(&lock);
            let mut checks = 0;
            let wrote = match lock.try_write_unless(|| {
                checks += 1;
                checks > patience
            }) {
                Ok(mut w) => {
                    w.0 = 1;
                    w.1 = 1;
                    true
                }
                Err(_) => false,
            };
            reader.join().unwrap();
            let expected = if wrote { (1, 1) } else { (0, 0) };
            assert_eq!(*lock.read(1), expected);
        });
    }
}
