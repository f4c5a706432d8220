//! The program's side of a kernel's `exit()` on a remote device: the other
//! threads' calls meanwhile.
//!
//! The thread whose launch is answered with the kernel's status
//! ([`crate::protocol::KERNEL_EXIT`]) closes the servers, finalises MPI and
//! exits with that status, as the kernel would have ended the program on a
//! local device. Until the exit's own teardown closes the offload runtime,
//! every other thread is still inside a live runtime: a call of theirs that
//! failed (the kernel's server answers every later request with an error,
//! the closed client refuses every call) would reach the runtime's fatal
//! error path and abort the process (status 134) before the exit comes.
//! So, once the process is known to be exiting this way, another thread's
//! call that fails parks instead: it never returns, and the process ends
//! with the kernel's status, as when a local kernel's `exit` ends threads
//! that are offloading.
//!
//! The process is known to be exiting as soon as any thread of this rank
//! reads a reply that says so: the launch's, or the kernel's server's
//! answer to another request ([`crate::protocol::exiting_reply`]), which
//! can arrive before the launching thread has read its own.
//!
//! MPI is finalised only while no other thread is inside the client (an
//! MPI call after `MPI_Finalize` is fatal in Open MPI): every call counts
//! itself in a [`ReadMostly`] for its duration, and the exiting thread
//! takes the write side, waiting for the calls in flight to end and
//! holding back every later one for good. Each of those calls ends: its
//! requests went before the servers were told to exit, and are answered
//! (a server that exits answers every request before its last `Exit`),
//! or are refused by the closed client (`Client`'s `sending` orders the
//! two); a server that died is watched for.
use omptarget_plugin_kit::state_lock::{self, ReadMostly, WriteGuard};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// Whether this thread is the one exiting for the kernel: its own
    /// later calls (the runtime's teardown at exit) go on and may fail.
    static EXITING_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// The calls in flight, and whether a kernel of this rank called `exit`.
pub struct KernelExit {
    /// A reply said a kernel of this rank called `exit`: the process is
    /// going away, with that kernel's status.
    exiting: AtomicBool,
    /// One thread exits for the kernel: a second kernel's `exit` at once
    /// (undefined on a local device too) parks its thread.
    claimed: AtomicBool,
    /// Read by every call for its duration; written by the exiting thread
    /// before it finalises MPI.
    calls: ReadMostly<()>,
}

impl Default for KernelExit {
    fn default() -> Self {
        Self::new()
    }
}

impl KernelExit {
    /// Nothing exiting, no call in flight.
    pub const fn new() -> Self {
        KernelExit {
            exiting: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            calls: ReadMostly::new(()),
        }
    }

    /// A reply said a kernel of this rank called `exit`.
    pub fn note(&self) {
        self.exiting.store(true, Ordering::SeqCst);
    }

    /// Whether a kernel of this rank called `exit`.
    pub fn is_exiting(&self) -> bool {
        self.exiting.load(Ordering::SeqCst)
    }

    /// Run `call`, one call of the client, counted in flight. A failure
    /// once the process is exiting for a kernel parks the calling thread
    /// (unless it is the exiting one), after it stopped counting.
    pub fn call<T, E>(&self, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if EXITING_THREAD.with(Cell::get) {
            // Held back by its own write otherwise; nobody finalises MPI
            // under it (it does that itself, then exits).
            return call();
        }
        let result = {
            // Waits for ever once the exiting thread holds the write.
            let _in_flight = state_lock::read(&self.calls);
            call()
        };
        if result.is_err() && self.is_exiting() {
            park();
        }
        result
    }

    /// Make this thread the one that exits for the kernel. Another thread
    /// already exiting for one: this one parks.
    pub fn claim(&self) {
        self.note();
        if self.claimed.swap(true, Ordering::SeqCst) {
            park();
        }
        EXITING_THREAD.with(|t| t.set(true));
    }

    /// Wait until no other thread is inside a call, then let later calls
    /// go on (they find the client closed, and touch no MPI): MPI may then
    /// be finalised under them. For a closed client only, whose calls in
    /// flight each end (answered before their server's `Exit`, or
    /// refused). Nothing to wait for on the thread exiting for a kernel,
    /// which holds [`KernelExit::quiesce`]'s guard itself.
    pub fn drain(&self) {
        if !EXITING_THREAD.with(Cell::get) {
            drop(self.calls.write());
        }
    }

    /// Wait until no other thread is inside a call, and hold every later
    /// one back for good: then MPI may be finalised. The guard is meant to
    /// be held until the process ends.
    pub fn quiesce(&self) -> WriteGuard<'_, ()> {
        self.calls.write()
    }
}

/// Never return: the process is ending with the kernel's status.
fn park() -> ! {
    loop {
        std::thread::park();
    }
}
