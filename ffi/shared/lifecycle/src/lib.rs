//! The lifecycle gate and lock primitives shared by the C shim and every
//! plugin:
//!
//! * [`Lifecycle`]: the process-wide lifecycle of the C shim's session, as
//!   one explicit state machine (below), with the fork gate;
//! * [`ReadMostly`]: the reader-writer lock of state that every call reads
//!   and only a lifecycle step writes, which every plugin's state sits
//!   behind (through `omptarget-plugin-kit`), with [`StripedCounts`], the
//!   per-thread counts of calls in flight that both build on.
//!
//! All of it is model-checked with loom (`--cfg loom`, `tests/loom.rs`).
//!
//! # The shim's lifecycle
//!
//! ## States
//!
//! ```text
//!            first call              close (process exit)
//!   Empty ───────────────▶ Live(S) ───────────────────────▶ Closed
//!     ▲  (session created,          │ no reader left: S is handed back
//!     │   published once)           │   for a full teardown (Idle)
//!     │                             │ readers left: S stays in the slot,
//!     │                             │   and handed out for a partial
//!     │                             │   teardown (InUse); finish_left
//!     │                             │   hands it back once none remains
//!     └── (never: a closed lifecycle stays closed)
//! ```
//!
//! ## Events and who may wait
//!
//! | event | what happens | waits? |
//! |---|---|---|
//! | a call (API, register, unregister) | [`Lifecycle::enter`]: count a reader in its thread's stripe, then read the closed bit and the fork gate, use the published session (create and publish one if none) | only a gated call (an API call of a thread not inside the runtime already) for a fork in progress; registrations never (they run under the dynamic loader's lock) |
//! | a call returns (or is unwound) | the [`Reader`] is dropped: one reader less | never |
//! | process exit, from any thread, inside a kernel or not | [`Lifecycle::close`]: set the closed bit, then sum the readers' stripes (a reader counts itself, then reads the bit: one of the two sees the other); no reader: the session for a full teardown; readers: a partial one, the rest left to the OS | spins at most [`CLOSE_SPINS`] yields for callers that are only backing out; never for a call |
//! | a kernel runs | [`Lifecycle::kernel`]: the reader is counted as in a kernel (holding no lock of the runtime) until it returns | on return, for a fork in progress (short: the fork waits for nobody in a kernel) |
//! | fork, before | [`Lifecycle::prepare_fork`]: close the fork gate, wait until every reader of another thread is in a kernel (none holds a runtime lock) | yes, for calls between their locks (never for a kernel) |
//! | fork, in the parent | [`Lifecycle::after_fork_in_parent`]: open the gate | never |
//! | fork, in the child | [`Lifecycle::after_fork_in_child`]: readers of other parent threads become phantoms (they never leave; they were in kernels, so they hold no runtime lock, but the child's teardown leaves what they may use); open the gate | never |
//! | a call after close | [`Entered::Closed`]: the shim parks other threads (the process is ending) and serves the closing thread without a session | the caller decides |
//!
//! Plugin death (a plugin finalized before the runtime) is not a state here:
//! the runtime's `Plugin` refuses calls into a dead plugin (`docs/plugins.md`).
//!
//! ## Invariants (checked by the loom model in `tests/loom.rs`)
//!
//! * A session is handed out for a full teardown at most once, and only
//!   when no reader holds it; so nothing of it is freed twice and no call
//!   reaches its plugins after their deinit.
//! * A reader's session stays valid until the reader is dropped.
//! * `close` never waits for a reader: a reader that never leaves (a
//!   thread blocked in a kernel, or the closing thread's own call that
//!   called `exit`) makes the teardown partial, not late.
//! * No session created is lost: each is published, discarded unused, or
//!   handed back (full teardown) or left (partial) at close (the model
//!   checks `created == dropped` at the end of every interleaving).
//! * Between [`Lifecycle::prepare_fork`] and the fork's end, every reader
//!   of another thread is in a kernel or waiting at the gate: none holds a
//!   lock of the runtime, so the child inherits none held. This holds also
//!   when the fork is called from inside a kernel: the forking thread
//!   never waits for itself.
//!
//! # Module map
//!
//! * This file: [`Lifecycle`], the state machine above.
//! * `striped`: [`StripedCounts`], calls in flight counted on per-thread
//!   cache lines.
//! * `read_mostly`: [`ReadMostly`], a reader-writer lock for state every
//!   call reads and only a lifecycle step writes (a plugin's state).
//! * `sync`: std's atomics, or loom's under `--cfg loom` (with the
//!   `SeqCst` fences loom needs).
//!
//! How the C shim uses it (fork, finalizers, locks): `docs/lifecycle.md`
//! in the repository.

#![deny(missing_docs)]

mod read_mostly;
mod striped;
mod sync;

pub use read_mostly::{ForkWriteGuard, ReadGuard, ReadMostly, StillRead, WriteGuard};
use std::ptr;
use std::sync::atomic::Ordering::SeqCst;
pub use striped::StripedCounts;
use sync::{yield_now, AtomicPtr, AtomicUsize};

/// The flags word: closed.
const CLOSED: usize = 1 << (usize::BITS - 1);
/// The flags word: the fork gate is closed (a fork is between its prepare
/// handler and its end).
const FORKING: usize = 1 << (usize::BITS - 2);
// A stripe holds readers below bit 31 and kernels above: 64-bit words only.
const _: () = assert!(
    usize::BITS == 64,
    "the lifecycle's counts need 64-bit words"
);

/// In a stripe: one reader inside a kernel (the kernel count sits above
/// the readers').
const KERNEL: usize = 1 << 31;
/// A stripe's readers' bits (all calls in flight, in kernels or not).
const READERS: usize = KERNEL - 1;

fn readers_of(count: usize) -> usize {
    count & READERS
}

fn kernels_of(count: usize) -> usize {
    count / KERNEL
}

/// How many times [`Lifecycle::close`] yields for callers that counted
/// themselves just before the close and are backing out (a few
/// microseconds; never a wait for a call in progress).
#[cfg(not(loom))]
pub const CLOSE_SPINS: usize = 64;
/// Fewer under the model: each yield multiplies the interleavings.
#[cfg(loom)]
pub const CLOSE_SPINS: usize = 2;

/// The state machine. One `static` of it in the shim.
pub struct Lifecycle<S> {
    /// [`CLOSED`] | [`FORKING`]: written only by a close and by forks.
    flags: AtomicUsize,
    /// The readers, each counted in its thread's stripe ([`StripedCounts`]):
    /// a call writes only its own stripe's cache line, never one that every
    /// thread writes. A reader counts itself, then reads `flags`; a close or
    /// a fork sets its flag, then sums the stripes. All four are `SeqCst`, so
    /// either the reader sees the flag or the sum sees the reader.
    readers: StripedCounts,
    /// The live session, or null. Owned by the lifecycle (a `Box<S>`).
    slot: AtomicPtr<S>,
    /// Readers inherited by a fork child from the parent's other threads:
    /// they never leave, and may hold any lock they held at the fork.
    phantoms: AtomicUsize,
    /// The id of the thread that closed the lifecycle (0: open).
    closer: AtomicUsize,
    /// The id of the thread between [`Lifecycle::prepare_fork`] and the
    /// fork's end (0: none, or not yet stored): its own calls pass the gate.
    forker: AtomicUsize,
}

// SAFETY: every field is an atomic except through `slot`, which holds a
// `Box<S>` (not auto-Sync only because of the raw pointer). Through a shared
// `&Lifecycle` threads get `&S` (readers, `Closing::InUse`), sound since
// `S: Sync`, and at most one thread gets the `Box<S>` itself (`Idle` or
// `finish_left`, taken by an atomic swap of the slot), sound since `S: Send`.
unsafe impl<S: Send + Sync> Sync for Lifecycle<S> {}
// SAFETY: moving the lifecycle to another thread moves the owned `Box<S>`
// with it (`S: Send`); the `&S` handed out borrow the lifecycle, so none
// outlives the move, and `S: Sync` covers `Sync` above.
unsafe impl<S: Send + Sync> Send for Lifecycle<S> {}

/// A call in progress: the session it may use until dropped.
pub struct Reader<'a, S> {
    lifecycle: &'a Lifecycle<S>,
    session: &'a S,
    /// The stripe this reader is counted in.
    stripe: usize,
}

impl<S> std::ops::Deref for Reader<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.session
    }
}

impl<S> Drop for Reader<'_, S> {
    fn drop(&mut self) {
        self.lifecycle.readers.sub(self.stripe, 1);
    }
}

/// What [`Lifecycle::enter`] found.
pub enum Entered<'a, S> {
    /// Open: the call proceeds with this reader of the live session.
    Open(Reader<'a, S>),
    /// Closed at exit. `by_this_thread`: the caller is the thread that
    /// closed it (it runs the rest of the process's finalizers).
    Closed {
        /// The caller is the thread that closed the lifecycle.
        by_this_thread: bool,
    },
}

/// What [`Lifecycle::close`] decided.
pub enum Closing<'a, S> {
    /// Closed before, by this or another thread.
    AlreadyClosed,
    /// Closed; there was no session.
    Empty,
    /// Closed with no reader left: the caller owns the session and tears it
    /// down completely.
    Idle(Box<S>),
    /// Closed while calls were in flight (`readers`, this thread's own
    /// included) or phantoms of a fork remained: the caller may release
    /// what no call can be using, and must leave the rest. The session
    /// stays allocated (left for [`Lifecycle::finish_left`]); `None` if a
    /// reader is still creating it.
    InUse {
        /// The session, left allocated; `None` if a reader is still creating it.
        session: Option<&'a S>,
        /// Readers counted at the close (this thread's own included).
        readers: usize,
        /// How many of `readers` are the closing thread's own calls.
        own: usize,
        /// Readers inherited by a fork child that will never leave.
        phantoms: usize,
    },
}

impl<S> Lifecycle<S> {
    /// An open lifecycle without a session.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Lifecycle {
            flags: AtomicUsize::new(0),
            readers: StripedCounts::new(),
            slot: AtomicPtr::new(ptr::null_mut()),
            phantoms: AtomicUsize::new(0),
            closer: AtomicUsize::new(0),
            forker: AtomicUsize::new(0),
        }
    }

    /// An open lifecycle without a session.
    #[cfg(loom)]
    pub fn new() -> Self {
        Lifecycle {
            flags: AtomicUsize::new(0),
            readers: StripedCounts::new(),
            slot: AtomicPtr::new(ptr::null_mut()),
            phantoms: AtomicUsize::new(0),
            closer: AtomicUsize::new(0),
            forker: AtomicUsize::new(0),
        }
    }

    /// Start a call: count a reader, then (if still open) use the live
    /// session, creating it with `create` if there is none. Two threads may
    /// both create one; the first to publish wins, and the other's is
    /// dropped unused (`create` must therefore be cheap and load nothing).
    /// `me` identifies the calling thread (non-zero).
    ///
    /// `gated`: wait while another thread forks (an API call of a thread
    /// that holds no lock of the runtime). Registrations pass ungated: they
    /// run under the dynamic loader's lock, which a call the fork waits for
    /// may need; they never wait.
    #[inline]
    pub fn enter(&self, me: usize, gated: bool, create: impl Fn() -> Box<S>) -> Entered<'_, S> {
        // Every API call passes here: the open, created, no-fork path is
        // kept inline and free of calls; closing, forking and creating the
        // session are out of line, so that the callers do not save
        // registers for them.
        let stripe = StripedCounts::stripe_of(me);
        self.readers.add(stripe, 1);
        let flags = self.flags.load(SeqCst);
        if flags & (CLOSED | FORKING) != 0 {
            if let Some(closed) = self.enter_closed_or_forking(me, gated, stripe, flags) {
                return closed;
            }
        }
        let mut p = self.slot.load(SeqCst);
        if p.is_null() {
            p = self.publish(create);
        }
        Entered::Open(Reader {
            lifecycle: self,
            stripe,
            // SAFETY: `p` is non-null (ours or the winner's, both from
            // `Box::into_raw`) and we are a counted reader of an open
            // lifecycle: `close` neither frees nor hands out a session while
            // a reader is counted, and a session leaves the slot only by
            // `close`/`finish_left`; the reference lives as long as the
            // `Reader`, whose drop uncounts us.
            session: unsafe { &*p },
        })
    }

    /// [`Lifecycle::enter`] once `flags` (read after counting this reader
    /// on `stripe`) say closed or forking: `Some` to return (closed, the
    /// reader uncounted), `None` when the reader is counted and may go on
    /// (not gated, or the fork is over, or this thread is the forker).
    #[cold]
    #[inline(never)]
    fn enter_closed_or_forking(
        &self,
        me: usize,
        gated: bool,
        stripe: usize,
        mut flags: usize,
    ) -> Option<Entered<'_, S>> {
        loop {
            if flags & CLOSED != 0 {
                self.readers.sub(stripe, 1);
                return Some(Entered::Closed {
                    by_this_thread: self.closer.load(SeqCst) == me,
                });
            }
            if gated && self.fork_gate_closed_for(flags, me) {
                // Counted after the fork began: back out, wait, retry.
                self.readers.sub(stripe, 1);
                self.wait_for_fork();
                self.readers.add(stripe, 1);
                flags = self.flags.load(SeqCst);
                continue;
            }
            return None;
        }
    }

    /// Create a session and publish it in the empty slot, or take the one
    /// another reader published first; the caller is a counted reader.
    #[cold]
    #[inline(never)]
    fn publish(&self, create: impl Fn() -> Box<S>) -> *mut S {
        let fresh = Box::into_raw(create());
        match self
            .slot
            .compare_exchange(ptr::null_mut(), fresh, SeqCst, SeqCst)
        {
            Ok(_) => fresh,
            Err(winner) => {
                // SAFETY: `fresh` came from `Box::into_raw` just above and
                // the failed compare_exchange did not publish it: no
                // other thread can hold it, so we rebuild the box once.
                drop(unsafe { Box::from_raw(fresh) });
                winner
            }
        }
    }

    /// Close at process exit (or when the shim itself is unloaded), from
    /// the thread `me`, which has `own` calls of its own in flight (an
    /// `exit` inside a kernel). Never waits for a call.
    pub fn close(&self, me: usize, own: usize) -> Closing<'_, S> {
        let before = self.flags.fetch_or(CLOSED, SeqCst);
        if before & CLOSED != 0 {
            return Closing::AlreadyClosed;
        }
        self.closer.store(me, SeqCst);
        // No reader can enter from here on: readers only go. A reader that
        // entered before the close may still publish a session it created,
        // so the slot is read only once no reader is left, or else left to
        // `finish_left`.
        let mut readers = readers_of(self.readers.sum());
        for _ in 0..CLOSE_SPINS {
            if readers <= own {
                break;
            }
            yield_now();
            readers = readers_of(self.readers.sum());
        }
        let phantoms = self.phantoms.load(SeqCst);
        if readers == 0 && phantoms == 0 {
            let p = self.slot.swap(ptr::null_mut(), SeqCst);
            if p.is_null() {
                return Closing::Empty;
            }
            // SAFETY: `p` came from `Box::into_raw` in `enter`; the lifecycle is
            // closed (no reader can enter), no reader or phantom is counted
            // (no `&S` is alive), and the swap took it out of the slot, so
            // this thread is its only owner.
            return Closing::Idle(unsafe { Box::from_raw(p) });
        }
        Closing::InUse {
            // SAFETY: the slot holds null or a `Box::into_raw` pointer (the
            // swap above did not run). It leaves the slot only through
            // `finish_left`, an `unsafe fn` whose contract is that no `&S`
            // of an `InUse` is still in use; until then the `&S`, which
            // borrows `self`, points at a live session.
            session: unsafe { self.slot.load(SeqCst).as_ref() },
            readers,
            own,
            phantoms,
        }
    }

    /// The session closed in use, once no reader (nor phantom) remains: the
    /// caller owns it and finishes its teardown. `None` if there is none or
    /// it is still in use.
    ///
    /// # Safety
    /// No `session` reference of a [`Closing::InUse`] that [`Lifecycle::close`]
    /// returned is used after this call (the returned box may free it). The
    /// shim calls this from its finalizer, after its own `close` is done.
    pub unsafe fn finish_left(&self) -> Option<Box<S>> {
        if self.flags.load(SeqCst) & CLOSED == 0
            || readers_of(self.readers.sum()) != 0
            || self.phantoms.load(SeqCst) != 0
        {
            return None;
        }
        let p = self.slot.swap(ptr::null_mut(), SeqCst);
        // SAFETY: a non-null `p` came from `Box::into_raw` in `enter`; the
        // lifecycle is closed (nobody enters), no reader or phantom is
        // counted (no `Reader`'s `&S` is alive), no `InUse` reference is in
        // use (our caller's contract), and the swap removed it from the
        // slot: this thread is its only owner.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }

    /// Run the kernel `f` of a call in flight on thread `me`: while it runs
    /// the reader holds no lock of the runtime (the caller's promise), so a
    /// fork need not wait for it. On return, wait for a fork in progress
    /// before taking locks again.
    pub fn kernel<R>(&self, me: usize, f: impl FnOnce() -> R) -> R {
        /// Counts the kernel as left even if `f` unwinds.
        struct Leave<'l, S> {
            lifecycle: &'l Lifecycle<S>,
            me: usize,
            stripe: usize,
        }
        impl<S> Drop for Leave<'_, S> {
            fn drop(&mut self) {
                let lifecycle = self.lifecycle;
                loop {
                    lifecycle.readers.sub(self.stripe, KERNEL);
                    let flags = lifecycle.flags.load(SeqCst);
                    if !lifecycle.fork_gate_closed_for(flags, self.me) {
                        return;
                    }
                    // Back in the kernel until the fork is over: the fork
                    // may have counted us as holding no lock.
                    lifecycle.readers.add(self.stripe, KERNEL);
                    lifecycle.wait_for_fork();
                }
            }
        }
        let stripe = StripedCounts::stripe_of(me);
        self.readers.add(stripe, KERNEL);
        let _leave = Leave {
            lifecycle: self,
            me,
            stripe,
        };
        f()
    }

    /// Before `fork()` (a `pthread_atfork` prepare handler), on thread `me`
    /// with `own_busy` calls of its own outside a kernel: close the fork
    /// gate and wait until every other reader is in a kernel, so the child
    /// inherits no lock of the runtime held by a thread it does not have.
    /// The wait is for calls between their locks (a data transfer at most),
    /// never for a kernel; with two forks at once, the second waits for the
    /// first to end.
    pub fn prepare_fork(&self, me: usize, own_busy: usize) {
        let mut flags = self.flags.load(SeqCst);
        loop {
            if flags & FORKING != 0 {
                yield_now();
                flags = self.flags.load(SeqCst);
                continue;
            }
            match self
                .flags
                .compare_exchange(flags, flags | FORKING, SeqCst, SeqCst)
            {
                Ok(_) => break,
                Err(now) => flags = now,
            }
        }
        self.forker.store(me, SeqCst);
        // Every reader that counted itself before the gate closed is seen
        // by the sums below; one that counts itself after sees the gate and
        // backs out, one that leaves its kernel after goes back in. The sum
        // is not one atomic snapshot, but after the gate closed a reader
        // only goes from busy to in a kernel or gone (or flickers busy while
        // backing out), so a sum that finds nobody busy found nobody.
        loop {
            let count = self.readers.sum();
            if readers_of(count).saturating_sub(kernels_of(count)) <= own_busy {
                break;
            }
            yield_now();
        }
    }

    /// After `fork()`, in the parent: open the gate.
    pub fn after_fork_in_parent(&self) {
        self.forker.store(0, SeqCst);
        self.flags.fetch_and(!FORKING, SeqCst);
    }

    /// In a fork child, from the forking thread `me` with `own` calls in
    /// flight, `own_kernels` of them inside a kernel: the parent's other
    /// readers are gone and will never leave; count them as phantoms.
    /// Nothing ever waits for them. Opens the fork gate. (The child has one
    /// thread.)
    pub fn after_fork_in_child(&self, me: usize, own: usize, own_kernels: usize) {
        let gone = readers_of(self.readers.sum()).saturating_sub(own);
        self.phantoms.fetch_add(gone, SeqCst);
        self.readers.reset();
        self.readers
            .add(StripedCounts::stripe_of(me), own + own_kernels * KERNEL);
        self.forker.store(0, SeqCst);
        self.flags.fetch_and(!FORKING, SeqCst);
    }

    /// With the flags `flags`, is another thread than `me` forking?
    fn fork_gate_closed_for(&self, flags: usize, me: usize) -> bool {
        flags & FORKING != 0 && self.forker.load(SeqCst) != me
    }

    fn wait_for_fork(&self) {
        while self.flags.load(SeqCst) & FORKING != 0 {
            yield_now();
        }
    }

    /// Readers counted now (a sum of the stripes, for reports).
    pub fn readers(&self) -> usize {
        readers_of(self.readers.sum())
    }

    /// Phantom readers inherited at a fork.
    pub fn phantoms(&self) -> usize {
        self.phantoms.load(SeqCst)
    }

    /// Closed by another thread than `me` (the process is exiting there).
    pub fn is_closed_by_another(&self, me: usize) -> bool {
        self.is_closed() && self.closer.load(SeqCst) != me
    }

    /// Closed (by any thread).
    pub fn is_closed(&self) -> bool {
        self.flags.load(SeqCst) & CLOSED != 0
    }
}

#[cfg(not(loom))]
impl<S> Default for Lifecycle<S> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_reader_keeps_the_session_and_close_leaves_it_in_use() {
        let lc: Lifecycle<u32> = Lifecycle::new();
        let Entered::Open(reader) = lc.enter(1, true, || Box::new(7)) else {
            panic!("open")
        };
        assert_eq!(*reader, 7);
        match lc.close(2, 0) {
            Closing::InUse {
                session, readers, ..
            } => {
                assert_eq!(session.copied(), Some(7));
                assert_eq!(readers, 1);
            }
            _ => panic!("in use"),
        }
        // SAFETY: no `InUse` reference of this test outlives its `match`.
        assert!(unsafe { lc.finish_left() }.is_none());
        drop(reader);
        // SAFETY: no `InUse` reference of this test outlives its `match`.
        assert_eq!(unsafe { lc.finish_left() }.as_deref(), Some(&7));
        // SAFETY: no `InUse` reference of this test outlives its `match`.
        assert!(unsafe { lc.finish_left() }.is_none());
        assert!(matches!(lc.close(2, 0), Closing::AlreadyClosed));
        assert!(matches!(
            lc.enter(2, true, || Box::new(0)),
            Entered::Closed {
                by_this_thread: true
            }
        ));
        assert!(matches!(
            lc.enter(3, true, || Box::new(0)),
            Entered::Closed {
                by_this_thread: false
            }
        ));
    }

    #[test]
    fn an_idle_session_is_handed_back_once() {
        let lc: Lifecycle<u32> = Lifecycle::new();
        drop(lc.enter(1, true, || Box::new(5)));
        let Closing::Idle(s) = lc.close(1, 0) else {
            panic!("idle")
        };
        assert_eq!(*s, 5);
        // SAFETY: no `InUse` reference of this test outlives its `match`.
        assert!(unsafe { lc.finish_left() }.is_none());
    }

    #[test]
    fn a_fork_child_counts_the_other_threads_as_phantoms() {
        let lc: Lifecycle<u32> = Lifecycle::new();
        let mine = lc.enter(1, true, || Box::new(1));
        let theirs = lc.enter(2, true, || Box::new(1));
        std::mem::forget(theirs); // the thread does not exist in the child
        lc.after_fork_in_child(1, 1, 0);
        assert_eq!((lc.readers(), lc.phantoms()), (1, 1));
        drop(mine);
        assert!(matches!(lc.close(1, 0), Closing::InUse { phantoms: 1, .. }));
        // SAFETY: no `InUse` reference of this test outlives its `match`.
        assert!(unsafe { lc.finish_left() }.is_none());
    }

    #[test]
    fn closing_without_a_session_is_empty() {
        let lc: Lifecycle<u32> = Lifecycle::new();
        assert!(matches!(lc.close(1, 0), Closing::Empty));
    }
}
