//! The process-wide runtime and its explicit lifecycle.
//!
//! * Created lazily by the first registration or API call (never in a global
//!   constructor).
//! * Each `__tgt_register_lib` counts a library; the `__tgt_unregister_lib`
//!   that removes the last one shuts the runtime down in the fixed order.
//!   A library registered after that gets a fresh runtime.
//! * Hot paths read the runtime without a lock: a reader announces itself in
//!   [`IN_FLIGHT`], then loads [`SESSION`]. Shutdown swaps [`SESSION`] to null
//!   and waits until every reader that may have seen the old pointer has left;
//!   only then does it own the session and tear it down. (arc-swap does the
//!   same job but keeps per-thread debt nodes that are never freed, which
//!   valgrind shows as blocks of ours still reachable at exit.)
//! * The safety net: if the process ends with a runtime that no unregister
//!   shut down (a program that only called `omp_target_alloc`, say), the
//!   shim's one `.fini_array` entry shuts it down. The dynamic loader runs it
//!   before the finalizers of the plugins we dlopen'd, so they still work.

use crate::session::Session;
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

/// The live session, or null. Owned by this slot: a `Box<Session>` turned
/// into a raw pointer, turned back only by the shutdown path.
static SESSION: AtomicPtr<Session> = AtomicPtr::new(ptr::null_mut());
/// Calls currently between announcing themselves and leaving.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Serialises creation, registration and shutdown (cold paths).
static LIFECYCLE: Mutex<()> = Mutex::new(());
/// A session whose shutdown was asked for from inside an in-flight call on
/// the asking thread; the outermost call on that thread finishes it.
static DEFERRED: AtomicPtr<Session> = AtomicPtr::new(ptr::null_mut());

thread_local! {
    /// How many in-flight calls this thread is nested in (no destructor).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LIFECYCLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A token proving the holder may dereference the session it loaded.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        IN_FLIGHT.fetch_add(1, SeqCst);
        DEPTH.with(|d| d.set(d.get() + 1));
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        IN_FLIGHT.fetch_sub(1, SeqCst);
        if depth == 0 {
            finish_deferred_shutdown();
        }
    }
}

/// Run `f` with the session, creating it if there is none.
/// Returns `None` only if the session could not be created.
pub(crate) fn with_session<T>(f: impl FnOnce(&Session) -> T) -> Option<T> {
    loop {
        let token = InFlight::enter();
        let p = SESSION.load(SeqCst);
        if !p.is_null() {
            // Safety: non-null and we are in flight, so shutdown waits for us.
            return Some(f(unsafe { &*p }));
        }
        // Create outside the token: shutdown may hold the lock while it
        // waits for in-flight calls to leave.
        drop(token);
        if !create_if_missing() {
            return None;
        }
    }
}

fn create_if_missing() -> bool {
    let _guard = lock();
    ensure_session_locked().is_some()
}

/// The live session, created if there is none. Call with the lock held.
fn ensure_session_locked() -> Option<*mut Session> {
    let p = SESSION.load(SeqCst);
    if !p.is_null() {
        return Some(p);
    }
    match Session::new() {
        Ok(session) => {
            let p = Box::into_raw(Box::new(session));
            SESSION.store(p, SeqCst);
            Some(p)
        }
        Err(err) => {
            eprintln!("Libomptarget error: cannot start the offload runtime: {err}");
            None
        }
    }
}

/// Run `register` with the session (creating it if needed), under the
/// lifecycle lock so that no shutdown can take the session meanwhile.
pub(crate) fn register_library(register: impl FnOnce(&Session)) {
    let _guard = lock();
    let p = match ensure_session_locked() {
        Some(p) => p,
        None => return,
    };
    // Safety: non-null, and shutdown needs the lock we hold.
    register(unsafe { &*p });
}

/// Run `unregister` with the live session, if any; if it removed the last
/// registered library, shut the session down in the fixed order.
///
/// An unregister that removed nothing (a descriptor never registered) does
/// not shut down: a session that only API calls created, with no library
/// registered, lives until the safety net.
pub(crate) fn unregister_library(unregister: impl FnOnce(&Session)) {
    let guard = lock();
    let p = SESSION.load(SeqCst);
    if p.is_null() {
        return;
    }
    // Safety: non-null, and shutdown needs the lock we hold.
    let session = unsafe { &*p };
    let before = session.registered_libs();
    unregister(session);
    let after = session.registered_libs();
    if after > 0 || after == before {
        return;
    }
    let old = SESSION.swap(ptr::null_mut(), SeqCst);
    if DEPTH.with(Cell::get) > 0 {
        // Called from inside an offload call on this thread: the session is
        // in use up our own stack. The outermost call finishes the shutdown.
        DEFERRED.store(old, SeqCst);
    } else {
        drop(guard);
        shut_down(old);
    }
}

/// Tear the session down once no call can still see it.
fn shut_down(old: *mut Session) {
    let own = DEPTH.with(Cell::get);
    while IN_FLIGHT.load(SeqCst) > own {
        std::thread::yield_now();
    }
    // Safety: swapped out of the slot, and no reader remains: we own it.
    let session = unsafe { Box::from_raw(old) };
    session.shutdown();
}

fn finish_deferred_shutdown() {
    // A plain load first: this runs at the end of every outermost call.
    if DEFERRED.load(SeqCst).is_null() {
        return;
    }
    let pending = DEFERRED.swap(ptr::null_mut(), SeqCst);
    if !pending.is_null() {
        shut_down(pending);
    }
}

/// The safety net: shut down a session still alive when the shim is
/// finalised (no unregister removed the last library).
extern "C" fn omptarget_safety_net() {
    crate::boundary::guard("libomptarget finalizer", (), || {
        let old = {
            let _guard = lock();
            SESSION.swap(ptr::null_mut(), SeqCst)
        };
        if !old.is_null() {
            shut_down(old);
        }
    });
}

#[used]
#[link_section = ".fini_array"]
static SAFETY_NET: extern "C" fn() = omptarget_safety_net;
