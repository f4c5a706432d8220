//! Closing: every server told this program rank is done, each one's
//! acknowledgement awaited, every later request refused.
use super::{CallError, Client};
use crate::protocol::{Exited, Reply};
use std::sync::atomic::Ordering;

/// Each server's acknowledgement of a close, by rank: its teardown's
/// summary, or why there is none.
pub type Acks = Vec<(i32, Result<String, CallError>)>;

impl Client {
    /// Tell every server this program rank is done and wait for each
    /// one's acknowledgement (its teardown's summary); then refuse every
    /// later request with `why`. Idempotent. A server found dead is not
    /// told: its acknowledgement is an error that says what it took with
    /// it.
    pub fn close(&self, why: &str) -> Acks {
        self.close_from(None, why)
    }

    /// [`Client::close`], server rank `first` told first: the server a
    /// kernel's `exit` is ending, which refuses every request until told
    /// (a live server may wait, in a copy to it, for it to be gone).
    pub fn close_from(&self, first: Option<i32>, why: &str) -> Acks {
        {
            // Waits for the calls sending meanwhile: their requests go
            // before the `Exit`s below, and every later one is refused.
            let _no_sending = self.sending.write();
            let mut closed = self.closed.lock().unwrap_or_else(|p| p.into_inner());
            if closed.is_some() {
                return Vec::new();
            }
            *closed = Some(why.to_owned());
            self.is_closed.store(true, Ordering::Release);
        }
        let mut acks = Vec::new();
        let firsts = self.servers.iter().filter(|s| Some(s.rank) == first);
        let rest = self.servers.iter().filter(|s| Some(s.rank) != first);
        for server in firsts.chain(rest) {
            if let Some(why) = self
                .dead(server.rank)
                .or_else(|| self.world.death_of(server.rank))
            {
                acks.push((server.rank, Err(CallError::NotToldToExit { why })));
                continue;
            }
            let rank = server.rank;
            // The copies gathered for it first, if they can go; told to
            // exit whatever happened to them, or it would wait for ever.
            let flushed = self.with_rank(rank, || self.flush(rank));
            let lost = self.lost.get(rank);
            let ack = self
                .with_rank(rank, || self.exit_request(rank))
                .and_then(|reply| Ok(Reply::<Exited>::payload(&reply)?.summary));
            let lost = flushed
                .err()
                .map(|err| err.to_string())
                .or(lost.map(|note| note.text));
            let ack = match (lost, ack) {
                (None, ack) => ack,
                (Some(lost), Ok(summary)) => Err(CallError::LostThenExited { lost, summary }),
                (Some(lost), Err(err)) => Err(CallError::LostAndFailed {
                    lost,
                    source: Box::new(err),
                }),
            };
            acks.push((rank, ack));
        }
        acks
    }

    /// Wait for the other threads' calls in flight to end (a closed
    /// client's: each was answered before its server's `Exit`, or refused),
    /// so that MPI may be finalised with none of them still testing a
    /// request (`MPI_Test` after `MPI_Finalize` aborts under Open MPI).
    pub fn drain(&self) {
        self.kernel_exit.drain();
    }
}
