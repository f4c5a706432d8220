//! One-way copies to a device: gathered per server, sent as one
//! `SubmitInline` before that server's next request (or when they fill
//! one), with no reply to wait for.
use super::{CallError, Client};
use crate::protocol::{
    InlineCopy, Op, Request, INLINE_BATCH_BASE, INLINE_BATCH_LIMIT, INLINE_COPY_FIELDS,
    INLINE_SUBMIT_LIMIT, NO_REPLY_TAG, REQUEST_SLOT, REQUEST_TAG,
};
use omptarget_mpi_wire::Failure;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// One-way copies to one server not sent yet ([`Client::submit_inline`]):
/// they go as one message before that server's next request, or when
/// they fill one.
#[derive(Default)]
pub(super) struct Gathered {
    copies: Mutex<GatheredCopies>,
    /// Whether `copies` holds any: read by every request without a lock.
    /// Cleared only once they are sent, so that a request that finds it
    /// clear goes after them.
    pending: AtomicBool,
}

#[derive(Default)]
pub(super) struct GatheredCopies {
    copies: Vec<InlineCopy>,
    /// Their size in a `SubmitInline`, besides its base.
    bytes: usize,
}

impl Client {
    /// Send the one-way copies gathered for server `rank`, if any.
    pub(super) fn flush(&self, rank: i32) -> Result<(), CallError> {
        let Some(gathered) = self.gathered.get(rank as usize) else {
            return Ok(());
        };
        if !gathered.pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut copies = gathered.copies.lock().unwrap_or_else(|p| p.into_inner());
        self.send_gathered(rank, gathered, &mut copies)
    }

    /// Send `copies` (locked by the caller) to server `rank` as one
    /// `SubmitInline`. The lock is held until it is sent: a request that
    /// another thread sends to that server after finding nothing pending
    /// goes after it (MPI keeps one sender's messages on one tag in
    /// order). Copies that cannot be sent (a dead server) are dropped with
    /// the error.
    pub(super) fn send_gathered(
        &self,
        rank: i32,
        gathered: &Gathered,
        copies: &mut GatheredCopies,
    ) -> Result<(), CallError> {
        if copies.copies.is_empty() {
            gathered.pending.store(false, Ordering::Release);
            return Ok(());
        }
        let op = Op::SubmitInline {
            copies: std::mem::take(&mut copies.copies),
        };
        copies.bytes = 0;
        let message = Request {
            reply_tag: NO_REPLY_TAG,
            op,
        }
        .encode();
        // One message, whatever other threads send to that server: a rest
        // would go on a tag that is not this request's own.
        let sent = if message.len() > REQUEST_SLOT {
            Err(Failure::Refused(format!(
                "one-way copies of {} bytes exceed the request slot",
                message.len()
            ))
            .into())
        } else {
            self.world.send(rank, REQUEST_TAG, &message)
        };
        gathered.pending.store(false, Ordering::Release);
        sent.map_err(|err| {
            let why = format!(
                "copies to {} that had returned could not be sent: {err}",
                self.world.describe(rank)
            );
            let tells_death = err.gave_up();
            self.lost.note(rank, &why, tells_death);
            CallError::Lost {
                text: why,
                tells_death,
            }
        })
    }

    /// Copy `data` (at most [`INLINE_SUBMIT_LIMIT`] bytes) to `ptr` on the
    /// server's `device` without waiting: the bytes are taken now, and go
    /// with the other copies gathered for that server before its next
    /// request (or when they fill a request); the server keeps a failure
    /// for the reply to this rank's next request.
    pub fn submit_inline(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        data: Vec<u8>,
    ) -> Result<(), CallError> {
        self.kernel_exit
            .call(|| self.submit_inline_now(server, device, ptr, data))
    }

    fn submit_inline_now(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        data: Vec<u8>,
    ) -> Result<(), CallError> {
        // Before the copies' lock (a flush takes them in that order): a
        // full batch is sent here.
        let _open = self.open_for_sending()?;
        if data.len() > INLINE_SUBMIT_LIMIT {
            return Err(CallError::TooLarge { len: data.len() });
        }
        let rank = self.servers[server].rank;
        let gathered = &self.gathered[rank as usize];
        let mut copies = gathered.copies.lock().unwrap_or_else(|p| p.into_inner());
        // Gathered after a loss, the copy would wait for a flush that
        // never comes (every call on that server fails first): refused,
        // with the loss first, as every other call (`with_server`). Under
        // the copies' lock, which a loss is noted under: a flush failing
        // meanwhile is seen.
        self.check_not_lost(rank)?;
        if let Some(why) = self.dead(rank) {
            return Err(CallError::Dead(why));
        }
        let bytes = INLINE_COPY_FIELDS + data.len();
        if INLINE_BATCH_BASE + copies.bytes + bytes > INLINE_BATCH_LIMIT {
            // Full: what was gathered goes first.
            self.with_rank(rank, || self.send_gathered(rank, gathered, &mut copies))?;
        }
        copies.copies.push(InlineCopy { device, ptr, data });
        copies.bytes += bytes;
        gathered.pending.store(true, Ordering::Release);
        Ok(())
    }
}
