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
pub(crate) fn with_session<T>(f: impl FnOnce(&Session) -> T) -> T {
    loop {
        let token = InFlight::enter();
        let p = SESSION.load(SeqCst);
        if !p.is_null() {
            // Safety: non-null and we are in flight, so shutdown waits for us.
            return f(unsafe { &*p });
        }
        // Create outside the token: a shutdown waits for in-flight calls.
        drop(token);
        ensure_session();
    }
}

/// The live session, created and published if there is none.
///
/// Creation takes no lock: a thread running a library constructor holds
/// the dynamic loader's lock while it registers, so no thread may wait for
/// anything of ours while it needs that lock. A new session is empty (the
/// plugins load at the first registration), so two threads may both create
/// one: the first to publish wins, the other drops its own, unused.
fn ensure_session() -> *mut Session {
    let p = SESSION.load(SeqCst);
    if !p.is_null() {
        return p;
    }
    let fresh = Box::into_raw(Box::new(Session::new()));
    match SESSION.compare_exchange(ptr::null_mut(), fresh, SeqCst, SeqCst) {
        Ok(_) => fresh,
        Err(winner) => {
            // Safety: `fresh` was never published: we own it alone.
            unsafe { Box::from_raw(fresh) }.discard();
            winner
        }
    }
}

/// Run `register` with the session (creating it if needed), under the
/// lifecycle lock so that no shutdown can take the session meanwhile.
/// The first registration loads the plugins (dlopen) under this lock; clang
/// calls `__tgt_register_lib` from library constructors, which already hold
/// the dynamic loader's lock, so the order is always loader, then ours.
pub(crate) fn register_library(register: impl FnOnce(&Session)) {
    loop {
        let p = ensure_session();
        let _guard = lock();
        if SESSION.load(SeqCst) != p {
            // Shut down (or replaced) since we looked: try again.
            continue;
        }
        // Safety: published, and shutdown needs the lock we hold.
        register(unsafe { &*p });
        return;
    }
}

/// Run `unregister` with the live session, if any; if it removed the last
/// registered library, shut the session down in the fixed order.
///
/// `unregister` runs in flight, not under the lifecycle lock: it may unload
/// images (dlclose), which takes the dynamic loader's lock. Only the
/// decision to shut down takes the lifecycle lock, and re-checks under it.
///
/// No shutdown when:
/// * the unregister removed nothing (a descriptor never registered): a
///   session that only API calls created lives until the safety net;
/// * another library registered meanwhile;
/// * the program still holds device memory of this runtime (an
///   `omp_target_alloc` block, mapped data): it may still use or free it
///   after its last offload library is gone, as it may with LLVM's runtime.
///   The session then lives on (a later library joins it) until an
///   unregister finds no memory held, or until the safety net at exit.
pub(crate) fn unregister_library(unregister: impl FnOnce(&Session)) {
    let p = {
        let _token = InFlight::enter();
        let p = SESSION.load(SeqCst);
        // Safety: non-null and we are in flight, so shutdown waits for us.
        let Some(session) = (unsafe { p.as_ref() }) else {
            return;
        };
        let before = session.registered_libs();
        unregister(session);
        let after = session.registered_libs();
        if after > 0 || after == before {
            return;
        }
        p
    };
    let guard = lock();
    if SESSION.load(SeqCst) != p {
        return;
    }
    // Safety: published, and shutdown needs the lock we hold.
    let session = unsafe { &*p };
    if session.registered_libs() > 0 || session.holds_user_memory() {
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
