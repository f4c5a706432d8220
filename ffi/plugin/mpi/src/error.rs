//! [`WireError`]: why an exchange with another rank failed, and, when MPI
//! could not be confirmed to have let go of a receive's memory, that
//! memory, kept.
//!
//! A receive given up on (its peer died) is cancelled; MPI may fail to
//! confirm the cancel in time, and then it may still write into the
//! receive's buffer whenever the receive completes. Such a buffer must
//! never be freed. The error that reports it owns it
//! ([`WireError::Unconfirmed`]'s [`Kept`]), and dropping a [`Kept`] never
//! frees what it holds: however the error is dropped, converted or
//! ignored, the buffer stays alive. No decision reads the error's text.
use std::fmt;
use std::mem::ManuallyDrop;

/// Ends the text of a [`WireError::Unconfirmed`] (the text is for people;
/// the variant is what code looks at).
const UNCONFIRMED_NOTE: &str = " (its receive could not be cancelled: its buffer is kept)";

/// Why an exchange on the wire failed.
#[derive(Debug)]
pub enum WireError {
    /// It failed, and MPI holds no memory of ours for it any more.
    Failed(String),
    /// A receive given up on that MPI did not confirm cancelled: MPI may
    /// still write into its memory. What of that memory is ours is held
    /// in `kept`, never freed; memory the caller passed in (a raw
    /// receive's) stays the caller's to keep, and the caller's owner
    /// hands it over with [`WireError::keep`].
    Unconfirmed {
        /// Why the receive was given up on.
        why: String,
        /// The buffers MPI may still write into.
        kept: Kept,
    },
}

/// Buffers MPI may still write into, kept for the rest of the process:
/// dropping a `Kept` leaks what it holds, on purpose (freed memory could
/// be reused, then written into by MPI).
#[derive(Debug, Default)]
pub struct Kept {
    buffers: Vec<ManuallyDrop<Vec<u8>>>,
}

impl Kept {
    /// How many bytes of buffers are kept.
    pub fn bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.capacity()).sum()
    }
}

impl WireError {
    /// A receive given up on that MPI did not confirm cancelled, nothing
    /// kept yet (its memory is its caller's: see [`WireError::keep`]).
    pub fn unconfirmed(why: String) -> WireError {
        WireError::Unconfirmed {
            why,
            kept: Kept::default(),
        }
    }

    /// Hand over `buffer`, the memory the failed receive was writing into:
    /// kept for ever in the error when MPI may still write into it
    /// ([`WireError::Unconfirmed`]), freed otherwise.
    pub fn keep(mut self, buffer: Vec<u8>) -> WireError {
        match &mut self {
            WireError::Unconfirmed { kept, .. } => kept.buffers.push(ManuallyDrop::new(buffer)),
            WireError::Failed(_) => drop(buffer),
        }
        self
    }

    /// Whether MPI may still write into the failed receive's memory.
    pub fn is_unconfirmed(&self) -> bool {
        matches!(self, WireError::Unconfirmed { .. })
    }

    /// The same error with `context` before its text (`"{context}: {why}"`),
    /// whatever it keeps still kept.
    pub fn context(self, context: impl fmt::Display) -> WireError {
        match self {
            WireError::Failed(why) => WireError::Failed(format!("{context}: {why}")),
            WireError::Unconfirmed { why, kept } => WireError::Unconfirmed {
                why: format!("{context}: {why}"),
                kept,
            },
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Failed(why) => f.write_str(why),
            WireError::Unconfirmed { why, .. } => write!(f, "{why}{UNCONFIRMED_NOTE}"),
        }
    }
}

impl std::error::Error for WireError {}

/// An MPI call's failure (`Mpi::check`) or a refusal: nothing of ours is
/// in MPI's hands for it.
impl From<String> for WireError {
    fn from(why: String) -> WireError {
        WireError::Failed(why)
    }
}

/// For the callers that report errors as text: the error's text. The
/// error is dropped, and with it its [`Kept`], which frees nothing.
impl From<WireError> for String {
    fn from(err: WireError) -> String {
        err.to_string()
    }
}

/// Keep `buffer` for the rest of the process: MPI may still write into it.
pub(crate) fn keep_forever(buffer: Vec<u8>) {
    let _kept = ManuallyDrop::new(buffer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The system allocator, noting whether the one block under watch was
    /// freed (this test binary's allocator).
    struct Watch;
    static WATCHED: AtomicUsize = AtomicUsize::new(0);
    static WATCHED_FREED: AtomicUsize = AtomicUsize::new(0);

    // SAFETY: every call is System's; only an address is compared.
    unsafe impl GlobalAlloc for Watch {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as System's contract, which is ours.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if ptr as usize == WATCHED.load(Ordering::SeqCst) {
                WATCHED_FREED.fetch_add(1, Ordering::SeqCst);
            }
            // SAFETY: as System's contract, which is ours.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Watch = Watch;

    /// Whether `f`, given a buffer under watch, frees it. One test at a
    /// time watches (a lock), so that no other test's block is taken for
    /// it; a kept block is never freed, so its address is never reused.
    fn frees_its_buffer(f: impl FnOnce(Vec<u8>)) -> bool {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let buffer = vec![7u8; 4096];
        WATCHED_FREED.store(0, Ordering::SeqCst);
        WATCHED.store(buffer.as_ptr() as usize, Ordering::SeqCst);
        f(buffer);
        let freed = WATCHED_FREED.load(Ordering::SeqCst) != 0;
        WATCHED.store(0, Ordering::SeqCst);
        freed
    }

    #[test]
    fn an_unconfirmed_receive_keeps_its_buffer_however_the_error_ends() {
        // Dropped.
        assert!(!frees_its_buffer(|b| drop(
            WireError::unconfirmed("x".into()).keep(b)
        )));
        // Turned into text, with context added first.
        assert!(!frees_its_buffer(|b| {
            let text: String = WireError::unconfirmed("rank 2 died".into())
                .keep(b)
                .context("a reply")
                .into();
            assert!(text.starts_with("a reply: rank 2 died"), "{text}");
        }));
        // Its text reworded (or empty): the variant decides, not the text.
        assert!(!frees_its_buffer(|b| {
            let err = WireError::Unconfirmed {
                why: String::new(),
                kept: Kept::default(),
            }
            .keep(b);
            assert!(err.is_unconfirmed());
            drop(err);
        }));
        assert!(!frees_its_buffer(keep_forever));
    }

    #[test]
    fn a_failed_exchange_frees_its_buffer_whatever_its_text_says() {
        assert!(frees_its_buffer(|b| drop(
            WireError::Failed(format!("x{UNCONFIRMED_NOTE}")).keep(b)
        )));
        // And the watch sees a free: the test above is not vacuous.
        assert!(frees_its_buffer(drop));
    }

    #[test]
    fn the_texts_are_the_messages_they_replace() {
        let err = WireError::unconfirmed("device server rank 1 on h died".into()).keep(vec![0; 8]);
        assert_eq!(
            err.to_string(),
            "device server rank 1 on h died (its receive could not be cancelled: its buffer is kept)"
        );
        assert!(matches!(&err, WireError::Unconfirmed { kept, .. } if kept.bytes() == 8));
        assert_eq!(
            WireError::from("MPI_Test: boom".to_string()).to_string(),
            "MPI_Test: boom"
        );
        assert!(!WireError::Failed("x".into()).is_unconfirmed());
    }
}
