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
/// Serialises registration and the shutdown decision (cold paths).
static LIFECYCLE: Mutex<()> = Mutex::new(());
/// Sessions taken out of the slot whose shutdown had to be called off (see
/// [`shut_down`]) while a newer session was already published: the safety
/// net shuts them down at exit.
static PARKED: Mutex<Vec<SessionPtr>> = Mutex::new(Vec::new());
/// How long the safety net waits, at exit, for calls still in flight on
/// other threads (a thread blocked in a kernel) before it gives up.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

thread_local! {
    /// How many in-flight calls this thread is nested in (no destructor).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Sessions whose shutdown this thread asked for from inside one of its
    /// own in-flight calls, chained through `Session::next_deferred`; its
    /// outermost call finishes them. Per thread: another thread's calls
    /// must not pick them up (they may be running inside a library
    /// constructor, under the dynamic loader's lock).
    static DEFERRED: Cell<*mut Session> = const { Cell::new(ptr::null_mut()) };
}

/// A session pointer owned by [`PARKED`].
struct SessionPtr(*mut Session);
// Safety: a parked session is owned by the list alone; only the safety net
// takes it out, under the list's lock.
unsafe impl Send for SessionPtr {}

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
        DEFERRED.with(|head| {
            // Safety: `old` is ours (swapped out); chain it to this thread's list.
            unsafe { (*old).next_deferred.store(head.get(), SeqCst) };
            head.set(old);
        });
    } else {
        drop(guard);
        shut_down(old);
    }
}

/// Wait until no call but this thread's own may still see a session taken
/// out of the slot, for at most `limit`; false if calls were still in
/// flight then.
fn wait_for_readers(limit: Option<std::time::Duration>) -> bool {
    let own = DEPTH.with(Cell::get);
    let started = std::time::Instant::now();
    while IN_FLIGHT.load(SeqCst) > own {
        if limit.is_some_and(|limit| started.elapsed() > limit) {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// Tear down a session taken out of the slot, once no call can still see
/// it, unless a call that was in flight when it was taken out registered a
/// library or took device memory: then the session lives on (put back in
/// the slot, or parked for the safety net if a newer one was published).
fn shut_down(old: *mut Session) {
    wait_for_readers(None);
    // Safety: out of the slot and no reader remains: we own it.
    let session = unsafe { &*old };
    if session.registered_libs() > 0 || session.holds_user_memory() {
        if SESSION
            .compare_exchange(ptr::null_mut(), old, SeqCst, SeqCst)
            .is_err()
        {
            PARKED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(SessionPtr(old));
        }
        return;
    }
    // Safety: as above.
    unsafe { Box::from_raw(old) }.shutdown();
}

fn finish_deferred_shutdown() {
    // A thread-local read first: this runs at the end of every outermost call.
    let mut next = DEFERRED.with(|head| head.replace(ptr::null_mut()));
    while !next.is_null() {
        let old = next;
        // Safety: a deferred session is owned by this thread's list.
        next = unsafe { (*old).next_deferred.swap(ptr::null_mut(), SeqCst) };
        shut_down(old);
    }
}

/// The safety net: at exit, shut down the session still alive (no
/// unregister removed the last library, or the program held device memory
/// then) and any parked one. Calls still in flight on other threads (a
/// thread blocked in a kernel while the process exits) are waited for only
/// so long: then the sessions are left alone, and we say so.
extern "C" fn omptarget_safety_net() {
    crate::boundary::guard("libomptarget finalizer", (), || {
        let live = {
            let _guard = lock();
            SESSION.swap(ptr::null_mut(), SeqCst)
        };
        let mut sessions = std::mem::take(&mut *PARKED.lock().unwrap_or_else(|e| e.into_inner()));
        if !live.is_null() {
            sessions.push(SessionPtr(live));
        }
        if sessions.is_empty() {
            return;
        }
        if !wait_for_readers(Some(EXIT_WAIT)) {
            eprintln!(
                "Libomptarget error: offload calls still running on other threads at exit; the runtime is not shut down"
            );
            return;
        }
        for SessionPtr(old) in sessions {
            // Safety: out of the slot (or parked) and no reader remains.
            unsafe { Box::from_raw(old) }.shutdown();
        }
    });
}

#[used]
#[link_section = ".fini_array"]
static SAFETY_NET: extern "C" fn() = omptarget_safety_net;
