//! Let glibc's thread exit pass through the runtime's panic boundaries.
//!
//! `pthread_exit` and an acted-upon `pthread_cancel` end a thread with a
//! *forced unwind*. A kernel may do either, and the unwind then has to
//! cross our frames on its way to the thread's start. Rust's
//! `catch_unwind` (every C entry point's panic boundary) catches any
//! unwind, and catching a forced unwind aborts the process ("FATAL:
//! exception not rethrown").
//!
//! So calls into foreign code that may end the thread (a kernel, or a
//! plugin that runs one) go through [`call_intercepting_exit`]: a small C
//! frame registers a cancellation buffer exactly as C's
//! `pthread_cleanup_push` does, glibc's unwinder stops at it, and the
//! call returns [`ThreadExit`] instead. Our frames then return normally
//! (locks released, counters decremented, nothing printed), and the
//! outermost frame of the library, past its panic boundary, calls
//! [`ThreadExit::resume`], which continues the exit: the thread ends as
//! the kernel asked, with its exit value or `PTHREAD_CANCELED`.
//!
//! A thread-local slot ([`set_pending`] / [`take_pending`]) carries the
//! [`ThreadExit`] from the call site to that outermost frame. It is a plain
//! `Cell` without a destructor, so a library that links this crate can
//! still be unloaded (no TLS destructor registered).
//!
//! Limitation: `siglongjmp` out of a callback skips the unregistration,
//! so a later `pthread_exit` of that same thread is undefined (as POSIX
//! says of a longjmp out of a `pthread_cleanup_push` region).

// `ThreadExit` is glibc's buffer (128 bytes), an `Err` built only when the
// thread exits; boxing it would allocate on that path for nothing.
#![allow(clippy::result_large_err)]

pub mod process_exit;

use std::cell::Cell;
use std::ffi::c_void;
use std::mem::MaybeUninit;

/// Room for glibc's `__pthread_unwind_buf_t` (104 bytes on x86_64; the
/// size is checked against the C compiler's at run time in tests).
const BUF_WORDS: usize = 16;

#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct UnwindBuf([u64; BUF_WORDS]);

extern "C-unwind" {
    fn omptarget_call_intercepting_exit(
        callback: unsafe extern "C-unwind" fn(*mut c_void),
        data: *mut c_void,
        buf: *mut UnwindBuf,
    ) -> i32;
}
extern "C" {
    fn omptarget_unregister_intercept(buf: *mut UnwindBuf);
    fn omptarget_unwind_buf_size() -> u64;
}
extern "C-unwind" {
    fn omptarget_resume_thread_exit(buf: *mut UnwindBuf) -> !;
}

/// The thread is exiting (`pthread_exit` or cancellation inside the call).
/// Resume it with [`ThreadExit::resume`] once no frame of ours that must
/// not be unwound by a foreign exception (a panic boundary) is left below.
/// Dropping it instead lets the thread go on (the shim's `ol*` queue
/// workers do, for work that ended its thread): its cleanup handlers have
/// run, and glibc keeps it marked as exiting, so it cannot be cancelled
/// again.
#[derive(Clone, Copy)]
#[must_use = "the thread must go on exiting: call resume() at the library's outermost frame"]
pub struct ThreadExit(UnwindBuf);

impl std::fmt::Debug for ThreadExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadExit")
    }
}

impl ThreadExit {
    /// Continue the thread's exit from here. Frames between here and the
    /// thread's start are unwound (their destructors run) by glibc.
    pub fn resume(mut self) -> ! {
        // SAFETY: a `ThreadExit` is only built by `call_intercepting_exit`
        // from a buffer that glibc's forced unwind longjmp'd to and that the
        // C side then unregistered; `__pthread_unwind_next` reads only its
        // link to the previously registered buffer, which belongs to a frame
        // still live above this one (the thread's start, or the program's
        // own `pthread_cleanup_push`), and the C declaration matches ours.
        unsafe { omptarget_resume_thread_exit(&mut self.0) }
    }
}

/// Call `f`; if the thread ends inside it (`pthread_exit`, cancellation),
/// return `Err(ThreadExit)` instead of letting the unwind go on. A Rust
/// panic in `f` unwinds to the caller as usual.
pub fn call_intercepting_exit<F: FnOnce()>(f: F) -> Result<(), ThreadExit> {
    unsafe extern "C-unwind" fn trampoline<F: FnOnce()>(data: *mut c_void) {
        // SAFETY: the only caller is `omptarget_call_intercepting_exit`
        // below, which passes back the `&mut Option<F>` it was given; that
        // local outlives the call and nothing else borrows it meanwhile.
        let f = unsafe { &mut *(data as *mut Option<F>) };
        if let Some(f) = f.take() {
            f();
        }
    }
    let mut f = Some(f);
    let mut buf = MaybeUninit::<UnwindBuf>::zeroed();
    // If `f` panics, the C frame is unwound without unregistering: do it
    // here so the thread's buffer chain never points at a dead frame.
    let registered = scopeguard_unregister(buf.as_mut_ptr());
    // SAFETY: the C function's declaration matches intercept.c; the
    // trampoline is instantiated for `F`, so the `data` it casts back is the
    // `Option<F>` passed here, alive for the whole call; `buf` points at an
    // aligned, zeroed buffer at least as large as glibc's (checked by the
    // `the_buffer_holds_glibcs` test) that outlives the call.
    let exiting = unsafe {
        omptarget_call_intercepting_exit(
            trampoline::<F>,
            &mut f as *mut Option<F> as *mut c_void,
            buf.as_mut_ptr(),
        )
    };
    registered.disarm();
    if exiting == 0 {
        Ok(())
    } else {
        // SAFETY: the buffer was zero-initialised (`zeroed`), and every bit
        // pattern is a valid `[u64; 16]`; on a non-zero return the C side
        // also filled it (sigsetjmp, registration, the jump back).
        Err(ThreadExit(unsafe { buf.assume_init() }))
    }
}

/// Unregisters the buffer if dropped while armed (a panic unwound `f`).
struct Unregister(*mut UnwindBuf, bool);

fn scopeguard_unregister(buf: *mut UnwindBuf) -> Unregister {
    Unregister(buf, true)
}

impl Unregister {
    fn disarm(mut self) {
        self.1 = false;
    }
}

impl Drop for Unregister {
    fn drop(&mut self) {
        if self.1 {
            // SAFETY: armed only while `f` runs, so `f` panicked: the C side
            // registered `self.0` before calling it and its unregistration
            // was unwound past; the buffer (a local of
            // `call_intercepting_exit`) is still alive, and unregistering
            // restores the thread's previous buffer.
            unsafe { omptarget_unregister_intercept(self.0) }
        }
    }
}

thread_local! {
    /// An exit intercepted on this thread, waiting for the library's
    /// outermost frame to resume it. No destructor (see the module docs).
    static PENDING: Cell<Option<ThreadExit>> = const { Cell::new(None) };
}

/// Remember an intercepted exit for the outermost frame of this library.
pub fn set_pending(exit: ThreadExit) {
    PENDING.with(|p| p.set(Some(exit)));
}

/// Is this thread exiting (an intercepted exit waits to be resumed)?
pub fn is_pending() -> bool {
    PENDING.with(|p| {
        let v = p.get();
        let pending = v.is_some();
        p.set(v);
        pending
    })
}

/// Take the intercepted exit of this thread, if any.
pub fn take_pending() -> Option<ThreadExit> {
    PENDING.with(Cell::take)
}

/// Resume this thread's intercepted exit, if there is one. Call it at the
/// library's outermost frame, after its panic boundary.
pub fn resume_pending() {
    if let Some(exit) = take_pending() {
        exit.resume();
    }
}

/// The size of glibc's buffer as the C compiler sees it.
pub fn c_buffer_size() -> usize {
    // SAFETY: the C function takes no argument and returns a constant
    // (`sizeof`); its declaration matches intercept.c.
    unsafe { omptarget_unwind_buf_size() as usize }
}

/// Our buffer is large enough for glibc's.
pub const fn rust_buffer_size() -> usize {
    std::mem::size_of::<UnwindBuf>()
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C-unwind" {
        fn pthread_exit(v: *mut c_void) -> !;
        fn pthread_testcancel();
    }

    /// Run `body` on a raw pthread (std's threads wrap their closure in a
    /// panic boundary, which a forced unwind must not meet) and return
    /// what `pthread_join` got.
    fn on_raw_thread(body: extern "C-unwind" fn(*mut c_void) -> *mut c_void) -> usize {
        let mut thread: libc::pthread_t = 0;
        // SAFETY: `extern "C-unwind" fn(*mut c_void) -> *mut c_void` and the
        // `extern "C"` start routine pthread_create expects have the same
        // ABI (the unwind flavour only matters when unwinding, and a forced
        // unwind is what the test means to let through); `thread` and
        // `value` are locals valid for the calls.
        unsafe {
            let start: extern "C" fn(*mut c_void) -> *mut c_void = std::mem::transmute(body);
            assert_eq!(
                libc::pthread_create(&mut thread, std::ptr::null(), start, std::ptr::null_mut()),
                0
            );
            let mut value = std::ptr::null_mut();
            assert_eq!(libc::pthread_join(thread, &mut value), 0);
            value as usize
        }
    }

    #[test]
    fn the_buffer_holds_glibcs() {
        assert!(c_buffer_size() <= rust_buffer_size(), "{}", c_buffer_size());
    }

    #[test]
    fn a_returning_call_is_ok_and_a_panic_passes_through() {
        let mut ran = false;
        assert!(call_intercepting_exit(|| ran = true).is_ok());
        assert!(ran);
        let caught = std::panic::catch_unwind(|| {
            let _ = call_intercepting_exit(|| panic!("boom"));
        });
        assert!(caught.is_err());
    }

    extern "C-unwind" fn exits_inside_a_panic_boundary(_: *mut c_void) -> *mut c_void {
        // A panic first: the chain must be restored after it.
        let _ = std::panic::catch_unwind(|| {
            let _ = call_intercepting_exit(|| panic!("boom"));
        });
        let outcome = std::panic::catch_unwind(|| {
            call_intercepting_exit(|| {
                // SAFETY: this runs on a raw pthread (`on_raw_thread`), so
                // `pthread_exit` is allowed; its forced unwind is intercepted
                // by `call_intercepting_exit`, whose contract is exactly that.
                unsafe { pthread_exit(42 as *mut c_void) }
            })
        });
        // The boundary saw a normal return, not the forced unwind.
        let exit = outcome.expect("no panic").expect_err("the thread exits");
        set_pending(exit);
        assert!(is_pending());
        resume_pending();
        unreachable!("resume_pending returned")
    }

    #[test]
    fn an_exit_inside_is_intercepted_and_resumed_past_a_panic_boundary() {
        assert_eq!(on_raw_thread(exits_inside_a_panic_boundary), 42);
    }

    extern "C-unwind" fn cancelled_inside(_: *mut c_void) -> *mut c_void {
        let exit = call_intercepting_exit(|| {
            // SAFETY: this runs on a raw pthread (`on_raw_thread`), which may
            // be cancelled; `pthread_self` is this thread, and the
            // cancellation acted upon at `pthread_testcancel` is a forced
            // unwind that `call_intercepting_exit` intercepts.
            unsafe {
                libc::pthread_cancel(libc::pthread_self());
                pthread_testcancel();
            }
        })
        .expect_err("cancelled");
        exit.resume()
    }

    #[test]
    fn a_cancellation_inside_is_intercepted_and_resumed() {
        // PTHREAD_CANCELED is (void *)-1.
        assert_eq!(on_raw_thread(cancelled_inside), usize::MAX);
    }
}
