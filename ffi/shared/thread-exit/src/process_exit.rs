//! `exit()` called by a kernel on a thread that libomp's finaliser waits
//! for.
//!
//! A `target nowait` region runs as a libomp *hidden helper* task. When
//! its kernel (run in-process by the host device) calls `exit(status)`,
//! glibc runs the exit handlers on that hidden helper thread, and libomp's
//! own handler (`__kmp_internal_end_atexit`) first waits for the hidden
//! helper team to finish (`__kmp_hidden_helper_threads_deinitz_wait`),
//! whose join waits for this very thread: the process hangs for ever. The
//! same program hangs on plain libomp without any offload runtime, and
//! crashes (SIGSEGV) on LLVM 14, 19 and 22's offload runtimes.
//!
//! The exit cannot be handed to another thread either: this thread would
//! then have to return into libomp (a parked one still blocks the join),
//! which completes the task, and the program's `taskwait` could return and
//! run on (or call `exit` itself) while the exit is in progress.
//!
//! So the host device redirects each image's references to `exit` to
//! [`kernel_exit`]. On a libomp hidden helper thread it does what libomp
//! leaves possible: flush C stdio, say on stderr that
//! exit handlers and destructors are skipped and why, and end the process
//! at once with the kernel's status (`_exit`). Anywhere else it is plain
//! `exit`.

mod hidden_helpers;

use std::ffi::c_int;

extern "C" {
    fn exit(status: c_int) -> !;
    fn _exit(status: c_int) -> !;
    fn fflush(stream: *mut std::ffi::c_void) -> c_int;
    fn write(fd: c_int, buf: *const std::ffi::c_void, count: usize) -> isize;
}

/// What a device image's `exit` calls become (see the module docs).
///
/// Never returns, never unwinds: nothing below panics (two environment
/// reads, a `dlsym`, formatting into a stack buffer, and C calls); were it
/// to, an `extern "C"` function aborts instead of unwinding into the
/// kernel.
/// Not exported: images reach it only through the redirected slots.
pub extern "C" fn kernel_exit(status: c_int) -> ! {
    if !hidden_helpers::on_hidden_helper_thread() {
        // SAFETY: glibc's `exit`, declared as in <stdlib.h>; the kernel
        // called `exit(status)`, and this is that call.
        unsafe { exit(status) }
    }
    let mut line = [0u8; 320];
    let len = skipped_handlers_line(status, &mut line);
    // SAFETY: `fflush(NULL)` flushes every C stream, as `exit` would; the
    // write is of `len` initialised bytes of `line` to stderr; `_exit` ends
    // the process, as `exit(status)` would have, with its status.
    unsafe {
        fflush(std::ptr::null_mut());
        write(2, line.as_ptr().cast(), len);
        _exit(status)
    }
}

/// The line [`kernel_exit`] prints, written into `out`; returns
/// its length. No allocation: the process may be in any state.
fn skipped_handlers_line(status: c_int, out: &mut [u8]) -> usize {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(out);
    let _ = writeln!(
        cursor,
        "omptarget: exit({status}) called in a target nowait region, on a libomp hidden helper \
         thread: libomp's finaliser cannot run there (it waits for this thread), so the process \
         ends now with status {status}, without exit handlers or destructors"
    );
    cursor.position() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_status_and_what_is_skipped() {
        let mut out = [0u8; 320];
        let len = skipped_handlers_line(-7, &mut out);
        let line = std::str::from_utf8(&out[..len]).unwrap();
        assert!(line.starts_with("omptarget: exit(-7) called in a target nowait region"));
        assert!(
            line.ends_with("without exit handlers or destructors\n"),
            "{line}"
        );
    }
}
