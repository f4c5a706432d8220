//! The process-wide session and its explicit lifecycle: the shim's side of
//! the state machine in `omptarget-lifecycle` (its docs list the states,
//! the events and who may wait; its loom model checks the invariants).
//!
//! * A session is created lazily by the first call (never in a global
//!   constructor); the plugins load at the first registration.
//! * Every call is a reader of the session ([`with_session`]): nothing in
//!   the shim waits for a reader, ever.
//! * Unregistering a library unloads its images; the runtime stays, as
//!   LLVM's does: the program may go on using `omp_*` calls and the device
//!   memory it holds after its last offload library is gone.
//! * The runtime is shut down when the process exits: from the
//!   `__tgt_unregister_lib` of the main program's own descriptor (clang's
//!   binaries call it from their finalizer, so only at exit), or else from
//!   the shim's one `.fini_array` function. Closing never waits: with no
//!   call in flight the teardown is complete; with calls in flight (a
//!   thread inside a kernel, or `exit` called from inside one) only what no
//!   call can be using is released (cached blocks), and the report says what
//!   was left to the OS. The shim's finalizer completes it if those calls
//!   have left by then.
//! * After the close, other threads that call in are parked for good (the
//!   process is ending: they must not fail, and an error could abort the
//!   process with another status); the closing thread's own late calls (a
//!   library finalizer that offloads) run without plugins, on the host.
//! * Fork: the prepare handler closes the fork gate and waits until every
//!   other thread's call is inside a kernel (where it holds no runtime
//!   lock) or waiting at the gate, so the child inherits no lock held by a
//!   thread it does not have. In the child, the calls that other parent
//!   threads had in flight become phantoms: never waited for; the child's
//!   teardown leaves what they may use to the OS.

use super::Session;
use omptarget_lifecycle::{Closing, Entered, Lifecycle};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

static LIFECYCLE: Lifecycle<Session> = Lifecycle::new();

thread_local! {
    /// How many calls this thread is inside (no destructor).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// How many of them are inside a kernel (no destructor).
    static KERNELS: Cell<usize> = const { Cell::new(0) };
}

/// Calls of this thread in the runtime outside a kernel: they may hold a
/// lock of the runtime.
fn own_busy() -> usize {
    DEPTH.with(Cell::get) - KERNELS.with(Cell::get)
}

/// This thread's id for the state machine (`pthread_self`, never 0).
fn me() -> usize {
    // SAFETY: `pthread_self` has no precondition and cannot fail; the
    // declaration is libc's.
    unsafe { libc::pthread_self() as usize }
}

/// Counts this thread's nesting while a call is inside the session.
struct Depth;

impl Depth {
    fn enter() -> Depth {
        DEPTH.with(|d| d.set(d.get() + 1));
        Depth
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Run `f` with the session, creating it if there is none.
/// An API call waits at the fork gate unless this thread is already busy
/// inside the runtime (then it may hold a lock the fork is waiting for).
pub(crate) fn with_session<T>(f: impl FnOnce(&Session) -> T) -> T {
    match LIFECYCLE.enter(me(), own_busy() == 0, new_session) {
        Entered::Open(reader) => {
            let _depth = Depth::enter();
            f(&reader)
        }
        Entered::Closed {
            by_this_thread: true,
        } => f(&Session::closed()),
        Entered::Closed {
            by_this_thread: false,
        } => park_until_exit(),
    }
}

/// [`with_session`] for a call that may be deferred work libomp waits for
/// at exit: a `target nowait` region, a `target enter/exit data nowait` or
/// `target update nowait`, or an `_async` copy's helper task
/// ([`as_helper_task`]). When such a call starts after another thread
/// closed the runtime at exit, parking it would hang the process (libomp's
/// finaliser, run by that same exit, waits for the task), so it returns
/// `closed()` without touching the runtime: the work is skipped, as the
/// process is ending with the exiting thread's status. A call that is not
/// deferred parks as [`with_session`] does: its result would be seen by
/// the program's own code, which must not act on a skipped call.
pub(crate) fn with_session_deferred<T>(
    deferred: bool,
    closed: impl FnOnce() -> T,
    f: impl FnOnce(&Session) -> T,
) -> T {
    let deferred = deferred || in_helper_task();
    match LIFECYCLE.enter(me(), own_busy() == 0, new_session) {
        Entered::Open(reader) => {
            let _depth = Depth::enter();
            let _deferred = DeferredCall::enter(deferred);
            f(&reader)
        }
        Entered::Closed {
            by_this_thread: true,
        } => f(&Session::closed()),
        Entered::Closed {
            by_this_thread: false,
        } if deferred => closed(),
        Entered::Closed {
            by_this_thread: false,
        } => park_until_exit(),
    }
}

thread_local! {
    /// This thread is inside a deferred call ([`with_session_deferred`])
    /// that libomp's finaliser may wait for (no destructor).
    static DEFERRED: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread's call as deferred work while it runs; restores the
/// previous mark when the call returns or is unwound.
struct DeferredCall(bool);

impl DeferredCall {
    fn enter(deferred: bool) -> DeferredCall {
        DeferredCall(DEFERRED.with(|d| d.replace(deferred || d.get())))
    }
}

impl Drop for DeferredCall {
    fn drop(&mut self) {
        DEFERRED.with(|d| d.set(self.0));
    }
}

/// Another thread closed the runtime at exit while this thread's deferred
/// call (a `target nowait` region, say) was in flight, and the call is
/// about to fail (its copies back after the kernel, on a runtime closed
/// under it): it must end quietly, neither print nor abort nor park.
/// libomp's finaliser, run by that exit, waits for the hidden helper
/// thread running this task (`__kmp_hidden_helper_threads_deinitz_wait`),
/// so parking it hung the process for ever.
pub(crate) fn deferred_call_after_close() -> bool {
    DEFERRED.with(Cell::get) && LIFECYCLE.is_closed_by_another(me())
}

thread_local! {
    /// This thread is running an `_async` call's helper task.
    static HELPER_TASK: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` as an `_async` call's helper task: its calls are deferred work
/// ([`with_session_deferred`]).
pub(crate) fn as_helper_task<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            HELPER_TASK.with(|h| h.set(self.0));
        }
    }
    let _reset = Reset(HELPER_TASK.with(|h| h.replace(true)));
    f()
}

fn in_helper_task() -> bool {
    HELPER_TASK.with(|h| h.get())
}

fn new_session() -> Box<Session> {
    Box::new(Session::new())
}

/// Run a kernel of this thread's call: no lock of the runtime is held
/// meanwhile, so a fork need not wait for it.
pub(crate) fn kernel_section(kernel: &mut dyn FnMut()) {
    struct Left;
    impl Drop for Left {
        fn drop(&mut self) {
            KERNELS.with(|k| k.set(k.get() - 1));
        }
    }
    KERNELS.with(|k| k.set(k.get() + 1));
    let _left = Left;
    LIFECYCLE.kernel(me(), kernel)
}

/// A call of another thread than the one that closed the runtime at exit
/// is about to report an error or abort (its plugin may be gone under it,
/// finalized by the exit): the process is ending with the exiting thread's
/// status, so this thread must not print, abort or go on; it parks.
/// A deferred call is not parked: see [`deferred_call_after_close`]; its
/// caller stays silent and returns instead.
pub(crate) fn park_if_closed_by_another_thread() {
    if LIFECYCLE.is_closed_by_another(me()) && !DEFERRED.with(Cell::get) {
        park_until_exit()
    }
}

/// The process is exiting and its runtime is closed: a call from another
/// thread than the exiting one must neither fail nor touch the runtime, so
/// the thread sleeps until the process is gone.
pub(crate) fn park_until_exit() -> ! {
    loop {
        // SAFETY: `pause` has no precondition: it touches no memory of ours
        // and only blocks until a signal is handled.
        unsafe { libc::pause() };
    }
}

/// Run `register` with the session. The first registration loads the
/// plugins; clang calls `__tgt_register_lib` from library constructors,
/// which hold the dynamic loader's lock, and no lock of ours is held
/// across plugin loading, so registration never waits for a thread that
/// needs the loader's lock. After the close, registrations are ignored.
pub(crate) fn register_library(register: impl FnOnce(&Session)) {
    match LIFECYCLE.enter(me(), false, new_session) {
        Entered::Open(reader) => {
            let _depth = Depth::enter();
            register(&reader)
        }
        Entered::Closed {
            by_this_thread: true,
        } => {}
        Entered::Closed {
            by_this_thread: false,
        } => park_until_exit(),
    }
}

/// Run `unregister` with the session. The main program's own descriptor
/// is unregistered only by its finalizer, at exit: then close first (other
/// threads may still be running its target regions, which need its
/// translation table) and unregister it only when the teardown is
/// complete.
pub(crate) fn unregister_library(desc: *const std::ffi::c_void, unregister: impl FnOnce(&Session)) {
    let Entered::Open(reader) = LIFECYCLE.enter(me(), false, new_session) else {
        return;
    };
    if reader.is_registered(desc) && is_in_main_program(desc) {
        drop(reader);
        close_at_exit(|s| {
            // SAFETY: `desc` is registered (checked above) and this is its
            // own unregistration, so it is the descriptor `register_lib` got
            // and still valid (clang's descriptors are static data of the
            // main program); `close_at_exit` runs this only on a session no
            // call can reach any more, as the callee requires.
            unsafe { s.unregister_lib_before_teardown(desc as *mut omptarget_abi::BinDesc) }
        });
        return;
    }
    let _depth = Depth::enter();
    unregister(&reader);
}

/// Is `addr` inside the main program (which cannot be unloaded, so its
/// descriptor is unregistered only by its finalizer at exit)?
fn is_in_main_program(addr: *const std::ffi::c_void) -> bool {
    // SAFETY: `getauxval` has no precondition; `dladdr` only reads the
    // loader's tables and writes the two `Dl_info` locals it is given, for
    // which all-zero bytes are valid values (null pointers); any address
    // may be passed to it.
    unsafe {
        let entry = libc::getauxval(libc::AT_ENTRY) as *const std::ffi::c_void;
        let mut main: libc::Dl_info = std::mem::zeroed();
        let mut of_addr: libc::Dl_info = std::mem::zeroed();
        libc::dladdr(entry, &mut main) != 0
            && libc::dladdr(addr, &mut of_addr) != 0
            && !main.dli_fbase.is_null()
            && main.dli_fbase == of_addr.dli_fbase
    }
}

/// Close the lifecycle at exit and tear the session down as far as no
/// call can be using it; `first` runs on a session no call can reach any
/// more, before its teardown. Never waits.
fn close_at_exit(first: impl FnOnce(&Session)) {
    let own = DEPTH.with(Cell::get);
    match LIFECYCLE.close(me(), own) {
        Closing::Idle(session) => {
            first(&session);
            session.shutdown()
        }
        Closing::InUse {
            session: Some(session),
            readers,
            own,
            phantoms,
        } => session.shutdown_in_use(&in_use_reason(readers, own, phantoms)),
        Closing::InUse { session: None, .. } | Closing::Empty | Closing::AlreadyClosed => {}
    }
}

/// Why the runtime could not be torn down completely at exit.
fn in_use_reason(readers: usize, own: usize, phantoms: usize) -> String {
    let mut parts = Vec::new();
    if readers > own {
        parts.push(format!(
            "{} call(s) still running on other threads (a kernel, say)",
            readers - own
        ));
    }
    if own > 0 {
        parts.push(format!(
            "{own} call(s) of the exiting thread itself (exit or a longjmp from inside a kernel)"
        ));
    }
    if phantoms > 0 {
        parts.push(format!(
            "{phantoms} call(s) in flight on other threads of the parent at fork()"
        ));
    }
    parts.join(", ")
}

/// How many forks made this process (0 in the first one): what a fork
/// child tells its parent's objects by (`offload_api::queues`).
static FORKS: AtomicU64 = AtomicU64::new(0);

/// [`FORKS`]: changes only in a fork child, before it returns from `fork`.
pub(crate) fn forks_seen() -> u64 {
    FORKS.load(Relaxed)
}

/// Fork: the gate (prepare), reopened in the parent; in the child, only
/// the forking thread exists, and the calls other threads had in flight
/// will never leave. Registered once, when the runtime is built: after the
/// plugins registered their own handlers, so that this prepare handler
/// runs first (glibc runs them in the reverse order of registration), and
/// not in a constructor. Before that, calls touch only the registry's
/// short locks, outside the gate.
pub(crate) fn register_fork_handler() {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if REGISTERED.swap(true, SeqCst) {
        return;
    }
    extern "C" fn prepare() {
        LIFECYCLE.prepare_fork(me(), own_busy());
    }
    extern "C" fn in_parent() {
        LIFECYCLE.after_fork_in_parent();
    }
    extern "C" fn in_child() {
        FORKS.fetch_add(1, SeqCst);
        LIFECYCLE.after_fork_in_child(me(), DEPTH.with(Cell::get), KERNELS.with(Cell::get));
    }
    // SAFETY: the three handlers are `extern "C" fn()` as pthread_atfork
    // expects; glibc's pthread_atfork (from libc_nonshared, linked into this
    // library) records them under this library's `__dso_handle` and drops
    // them if it is unloaded, so they never dangle. They only touch atomics
    // and this thread's destructor-free thread-locals, so running in the
    // middle of a fork (in the child, with one thread) is fine.
    let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(in_parent), Some(in_child)) };
    if rc != 0 {
        tracing::debug!(
            rc,
            "pthread_atfork failed; a fork child keeps the parent's readers"
        );
    }
}

/// The shim's one finalizer: at exit (or when the shim itself is
/// unloaded), close if the main program's unregister did not, and finish a
/// teardown left partial if the calls that were in flight have left.
extern "C" fn omptarget_safety_net() {
    crate::boundary::guard("libomptarget finalizer", (), || {
        close_at_exit(|_| {});
        // SAFETY: `close_at_exit` above has returned, and with it ended its
        // use of the `InUse` session; no other `close` hands one out (a
        // later one is `AlreadyClosed`).
        if let Some(session) = unsafe { LIFECYCLE.finish_left() } {
            session.shutdown();
        }
    });
}

#[used]
#[link_section = ".fini_array"]
static SAFETY_NET: extern "C" fn() = omptarget_safety_net;
