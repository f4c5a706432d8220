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
//! ignored, the buffer stays alive. No decision reads the error's text:
//! [`MpiError`] and [`Failure`] say what failed, as types.
use std::mem::ManuallyDrop;

pub use crate::mpi::error::MpiError;

/// Why an exchange with another rank failed, when MPI holds no memory of
/// ours for it (any more).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// An MPI call failed.
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// The wait was given up on: its watch said why (its peer died, or
    /// every peer it could come from did).
    #[error("{0}")]
    GaveUp(String),
    /// A fragment shorter than the sender had to send (a sender out of
    /// step).
    #[error("{from} sent {count} bytes on tag {tag} where {due} were due")]
    Short {
        /// The sender, described.
        from: String,
        /// What came.
        count: u64,
        /// Its tag.
        tag: i32,
        /// What was due.
        due: usize,
    },
    /// A message longer than the protocol carries.
    #[error("a message of {len} bytes: the protocol carries at most {} GiB", crate::protocol::MAX_MESSAGE >> 30)]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// A receive longer than one MPI count (`int`).
    #[error("a receive of {len} bytes")]
    TooLarge {
        /// Its length.
        len: usize,
    },
    /// No memory to take a message's rest into, even to drop it.
    #[error("{len} bytes from {from}: {source}")]
    NoRoom {
        /// What was to be taken.
        len: usize,
        /// The sender, described.
        from: String,
        /// The allocator's refusal.
        source: std::collections::TryReserveError,
    },
    /// Refused before anything was sent (the caller says why).
    #[error("{0}")]
    Refused(String),
    /// Another failure, with what it was doing.
    #[error("{context}: {source}")]
    Context {
        /// What was being done.
        context: String,
        /// The failure.
        source: Box<Failure>,
    },
}

impl Failure {
    /// Whether the wait was given up on because its watch said so (a
    /// peer's death), not because MPI failed.
    pub fn gave_up(&self) -> bool {
        match self {
            Failure::GaveUp(_) => true,
            Failure::Context { source, .. } => source.gave_up(),
            _ => false,
        }
    }
}

/// Why an exchange on the wire failed: the [`Failure`], and whether MPI
/// may still write into memory of ours for it.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// It failed, and MPI holds no memory of ours for it any more.
    #[error(transparent)]
    Failed(Failure),
    /// A receive given up on that MPI did not confirm cancelled: MPI may
    /// still write into its memory. What of that memory is ours is held
    /// in `kept`, never freed; memory the caller passed in (a raw
    /// receive's) stays the caller's to keep, and the caller's owner
    /// hands it over with [`WireError::keep`].
    #[error("{why} (its receive could not be cancelled: its buffer is kept)")]
    Unconfirmed {
        /// Why the receive was given up on.
        why: Failure,
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
    pub fn unconfirmed(why: Failure) -> WireError {
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

    /// Why it failed.
    pub fn failure(&self) -> &Failure {
        match self {
            WireError::Failed(why) | WireError::Unconfirmed { why, .. } => why,
        }
    }

    /// Whether the wait was given up on because its watch said so (a
    /// peer's death: the error's text already says it).
    pub fn gave_up(&self) -> bool {
        self.failure().gave_up()
    }

    /// The same error with `context` before its text (`"{context}: {why}"`),
    /// whatever it keeps still kept.
    pub fn context(self, context: impl std::fmt::Display) -> WireError {
        let wrap = |why: Failure| Failure::Context {
            context: context.to_string(),
            source: Box::new(why),
        };
        match self {
            WireError::Failed(why) => WireError::Failed(wrap(why)),
            WireError::Unconfirmed { why, kept } => WireError::Unconfirmed {
                why: wrap(why),
                kept,
            },
        }
    }
}

impl From<Failure> for WireError {
    fn from(why: Failure) -> WireError {
        WireError::Failed(why)
    }
}

/// An MPI call's failure: nothing of ours is in MPI's hands for it.
impl From<MpiError> for WireError {
    fn from(err: MpiError) -> WireError {
        WireError::Failed(Failure::Mpi(err))
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

    fn gave_up(why: &str) -> Failure {
        Failure::GaveUp(why.into())
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
            WireError::unconfirmed(gave_up("x")).keep(b)
        )));
        // Turned into text, with context added first.
        assert!(!frees_its_buffer(|b| {
            let text = WireError::unconfirmed(gave_up("rank 2 died"))
                .keep(b)
                .context("a reply")
                .to_string();
            assert!(text.starts_with("a reply: rank 2 died"), "{text}");
        }));
        // Its text reworded (or empty): the variant decides, not the text.
        assert!(!frees_its_buffer(|b| {
            let err = WireError::Unconfirmed {
                why: gave_up(""),
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
            WireError::Failed(gave_up(
                "x (its receive could not be cancelled: its buffer is kept)"
            ))
            .keep(b)
        )));
        // And the watch sees a free: the test above is not vacuous.
        assert!(frees_its_buffer(drop));
    }

    #[test]
    fn the_texts_are_the_messages_they_replace() {
        let err =
            WireError::unconfirmed(gave_up("device server rank 1 on h died")).keep(vec![0; 8]);
        assert_eq!(
            err.to_string(),
            "device server rank 1 on h died (its receive could not be cancelled: its buffer is kept)"
        );
        assert!(matches!(&err, WireError::Unconfirmed { kept, .. } if kept.bytes() == 8));
        let mpi = WireError::from(MpiError::Call {
            call: "MPI_Test",
            code: 5,
            text: "boom".into(),
        });
        assert_eq!(mpi.to_string(), "MPI_Test: boom");
        assert!(!mpi.is_unconfirmed());
        // Only a watch's verdict says the peer's death is in the text.
        assert!(!mpi.gave_up());
        assert!(err.gave_up());
        assert!(WireError::from(gave_up("dead"))
            .context("a reply")
            .gave_up());
    }
}
