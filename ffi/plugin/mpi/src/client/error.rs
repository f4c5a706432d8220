//! [`CallError`]: why a call of the client failed, as a type. Whether its
//! text already tells a server's death ([`CallError::tells_death`]) is
//! read off the variants, never off the text.
use crate::protocol::{Malformed, ReplyError, INLINE_SUBMIT_LIMIT};
use crate::world::{JoinError, ThreadLevel};
use omptarget_mpi_wire::{MpiError, WireError};

/// The server of a copy between two servers that an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The server the bytes come from; also a copy within one server
    /// (its error names the source device), and a failure of neither
    /// server met before the copy started (the client closed, no room for
    /// the relay's buffer).
    Source,
    /// The server the bytes go to.
    Destination,
}

/// Why a copy between two servers failed, and on which side: the caller
/// names that side's device.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ExchangeError {
    /// The server the error is about.
    pub side: Side,
    /// What went wrong.
    pub error: CallError,
}

impl CallError {
    /// This error, about `side` of a copy between two servers.
    pub fn on(self, side: Side) -> ExchangeError {
        ExchangeError { side, error: self }
    }
}

/// Why a call to the device servers failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// An exchange on the wire failed (it keeps what MPI may still write
    /// into).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The server answered without the payload asked for: its error, or a
    /// reply that does not decode.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    /// A server's greeting does not decode.
    #[error("rank {rank}: {source}")]
    Greeting {
        /// The server's rank.
        rank: i32,
        /// What is wrong with it.
        source: Malformed,
    },
    /// Joining the job failed.
    #[error(transparent)]
    Join(#[from] JoinError),
    /// The servers `OMPTARGET_MPI_SPAWN` asks for cannot be described.
    #[error(transparent)]
    SpawnConfig(#[from] crate::spawn::SpawnConfigError),
    /// `OMPTARGET_MPI_TIMEOUT` is not a number of seconds.
    #[error(transparent)]
    BadLimit(#[from] crate::world::liveness::BadLimit),
    /// MPI's thread level is too low for remote devices.
    #[error(transparent)]
    ThreadLevel(#[from] ThreadLevel),
    /// An MPI call failed (leaving the job).
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// The servers were told to exit: no request may go any more.
    #[error("the remote devices are gone: {0}")]
    Closed(String),
    /// The server is known dead: how it was found so.
    #[error("{0}")]
    Dead(String),
    /// The call failed and its server was then found dead (`why`).
    #[error("{why}; {source}")]
    DiedDuring {
        /// How the server was found dead.
        why: String,
        /// The call's own failure.
        source: Box<CallError>,
    },
    /// One-way copies to the server that had returned success could not
    /// be sent: every later call on that server fails with this.
    #[error("{text}")]
    Lost {
        /// What was lost, and why.
        text: String,
        /// Whether `text` tells the server's death.
        tells_death: bool,
    },
    /// A copy between two servers relayed through this process found no
    /// memory for its buffer.
    #[error("no room here for the {len}-byte buffer of a copy between two servers: {source}")]
    NoRelayRoom {
        /// The buffer's length.
        len: usize,
        /// The allocator's refusal.
        source: std::collections::TryReserveError,
    },
    /// A one-way copy larger than one travels.
    #[error("a one-way copy of {len} bytes (at most {INLINE_SUBMIT_LIMIT})")]
    TooLarge {
        /// Its length.
        len: usize,
    },
    /// A server found dead at the close was not told to exit.
    #[error("{why}: not told to exit; what this program left on its devices went with it")]
    NotToldToExit {
        /// How it was found dead.
        why: String,
    },
    /// Copies to the server were lost, then it was told to exit.
    #[error("{lost} (then exited: {summary})")]
    LostThenExited {
        /// The lost copies' note.
        lost: String,
        /// The server's summary.
        summary: String,
    },
    /// Copies to the server were lost, and telling it to exit failed.
    #[error("{lost}; {source}")]
    LostAndFailed {
        /// The lost copies' note.
        lost: String,
        /// Why telling it to exit failed.
        source: Box<CallError>,
    },
}

impl CallError {
    /// Hand over `buffer`, the memory the failed call's transfer used: kept
    /// for ever when MPI may still write into it or read it
    /// ([`WireError::keep`]: a wire error that could not be confirmed
    /// cancelled, as it is or inside [`CallError::DiedDuring`]), freed
    /// otherwise.
    pub fn keep(self, buffer: Vec<u8>) -> CallError {
        match self {
            CallError::Wire(err) => CallError::Wire(err.keep(buffer)),
            CallError::DiedDuring { why, source } => CallError::DiedDuring {
                why,
                source: Box::new(source.keep(buffer)),
            },
            other => other,
        }
    }

    /// Whether the text already says that the call's server died (a wait
    /// its death ended, or a server known dead): then the death is not
    /// said twice.
    pub fn tells_death(&self) -> bool {
        match self {
            CallError::Wire(err) => err.gave_up(),
            CallError::Dead(_) | CallError::DiedDuring { .. } => true,
            CallError::Lost { tells_death, .. } => *tells_death,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omptarget_mpi_wire::Failure;

    #[test]
    fn a_death_is_told_by_the_variant_whatever_the_text_says() {
        // A wait its peer's death ended: told, whatever its words.
        let gave_up = CallError::from(WireError::from(Failure::GaveUp("gone".into())));
        assert!(gave_up.tells_death());
        // An MPI failure whose text happens to read like a death: not
        // told (the death is said before it).
        let mpi = CallError::from(WireError::from(MpiError::Call {
            call: "MPI_Test",
            code: 1,
            text: "device server rank 2 on h died (its process is gone)".into(),
        }));
        assert!(!mpi.tells_death());
        assert!(CallError::Dead("x".into()).tells_death());
        assert!(CallError::Lost {
            text: "copies lost".into(),
            tells_death: true,
        }
        .tells_death());
        assert!(!CallError::Lost {
            text: "died".into(),
            tells_death: false,
        }
        .tells_death());
        assert!(!CallError::Closed("died".into()).tells_death());
        let during = CallError::DiedDuring {
            why: "rank 2 died".into(),
            source: Box::new(mpi),
        };
        assert!(during.tells_death());
        assert!(during.to_string().starts_with("rank 2 died; MPI_Test: "));
    }

    #[test]
    fn a_buffer_mpi_may_still_use_is_kept_inside_a_death_too() {
        let kept_bytes = |err: &CallError| match err {
            CallError::Wire(WireError::Unconfirmed { kept, .. }) => kept.bytes(),
            CallError::DiedDuring { source, .. } => match &**source {
                CallError::Wire(WireError::Unconfirmed { kept, .. }) => kept.bytes(),
                _ => 0,
            },
            _ => 0,
        };
        let unconfirmed =
            || CallError::from(WireError::unconfirmed(Failure::GaveUp("gone".into())));
        let kept = unconfirmed().keep(Vec::with_capacity(4096));
        assert_eq!(kept_bytes(&kept), 4096);
        let during = CallError::DiedDuring {
            why: "rank 2 died".into(),
            source: Box::new(unconfirmed()),
        }
        .keep(Vec::with_capacity(4096));
        assert_eq!(kept_bytes(&during), 4096);
        // A failure MPI is done with frees it (nothing kept).
        let failed = CallError::from(WireError::from(Failure::GaveUp("gone".into())));
        assert_eq!(kept_bytes(&failed.keep(Vec::with_capacity(4096))), 0);
    }
}
