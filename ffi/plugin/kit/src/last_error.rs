//! The calling thread's last failure message, for
//! `__tgt_rtl_last_error_message`.
//!
//! LLVM's plugin ABI returns only a code (or null) on failure, so the
//! runtime could only say "load_binary failed"; the reason (an undefined
//! symbol, a bad ELF ...) went to stderr at best. Every entry's failure
//! (the kit's panic boundary) is also stored here, per thread, and the
//! runtime reads it back into its error value right after the failed call.
//!
//! The buffer is a fixed array in a `const` thread-local of a type without
//! drop glue, so no thread-exit destructor is registered (one would pin the
//! plugin library in memory: glibc does not unload a library with live
//! thread-local destructors). Longer messages are cut at a UTF-8 boundary.

use std::cell::RefCell;
use std::fmt::{self, Write};

/// Longest message kept, in bytes.
pub const CAPACITY: usize = 1024;

struct Message {
    len: usize,
    bytes: [u8; CAPACITY],
}

impl Write for Message {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = CAPACITY - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

thread_local! {
    static LAST: RefCell<Message> = const {
        RefCell::new(Message { len: 0, bytes: [0; CAPACITY] })
    };
}

/// Keep `message` as this thread's last failure (replacing the previous one).
pub fn set(message: &dyn fmt::Display) {
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            last.len = 0;
            let _ = write!(last, "{message}");
        }
    });
}

/// Forget this thread's message (every entry starts with this, so a
/// message is always about the call that just failed).
pub fn clear() {
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            last.len = 0;
        }
    });
}

/// Copy this thread's last failure message into `buf` (at most `cap`
/// bytes), forget it, and return its length (0: none; the kept message
/// itself is at most [`CAPACITY`] bytes, cut at a character boundary).
///
/// # Safety
/// `buf` is null or writable for `cap` bytes.
pub unsafe fn take_into(buf: *mut u8, cap: usize) -> usize {
    LAST.try_with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            return 0;
        };
        let len = std::mem::replace(&mut last.len, 0);
        if !buf.is_null() {
            let n = len.min(cap);
            // SAFETY: `buf` is writable for `cap` >= n bytes (contract);
            // the source is our own array, which it cannot overlap.
            unsafe { std::ptr::copy_nonoverlapping(last.bytes.as_ptr(), buf, n) };
        }
        len
    })
    .unwrap_or(0)
}

/// This thread's last failure message, forgotten once read (for tests).
pub fn take() -> Option<String> {
    let mut buf = [0u8; CAPACITY];
    // SAFETY: `buf` is writable for its length.
    let len = unsafe { take_into(buf.as_mut_ptr(), buf.len()) };
    (len > 0).then(|| String::from_utf8_lossy(&buf[..len.min(CAPACITY)]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_read_once_and_long_ones_are_cut_on_a_char_boundary() {
        assert_eq!(take(), None);
        set(&"load_binary: undefined symbol: foo");
        assert_eq!(
            take().as_deref(),
            Some("load_binary: undefined symbol: foo")
        );
        assert_eq!(take(), None, "read once");
        let long = "é".repeat(CAPACITY); // 2 bytes each
        set(&long);
        let got = take().unwrap();
        assert_eq!(got.len(), CAPACITY);
        assert!(got.chars().all(|c| c == 'é'));
    }
}
