//! Protocol messages: the first part into a receive posted before it
//! comes ([`World::post`]), the rest, if long, after it on another tag.
use super::wait::Abandoned;
use super::World;
use crate::error::{self, Failure, WireError};
use crate::mpi;
use crate::protocol;

impl World {
    /// Post the receive of a protocol message's first part (at most
    /// `slot` bytes) from `source` (or [`World::any_source`]) with `tag`,
    /// into `buffer` (emptied; reused for its capacity). Posted before the
    /// message comes, MPI matches it straight into the buffer: no probe
    /// polls, no unexpected-message copy (the remote round trip's floor).
    pub fn post(
        &self,
        source: i32,
        tag: i32,
        mut buffer: Vec<u8>,
        slot: usize,
    ) -> Result<Posted<'_>, WireError> {
        buffer.clear();
        buffer.reserve_exact(slot);
        // SAFETY: `buffer` has room for `slot` bytes; the `Posted` owns it
        // until the receive completes or is known cancelled (else it is
        // never freed).
        let request = unsafe { self.irecv(buffer.as_mut_ptr(), slot, source, tag)? };
        Ok(Posted {
            world: self,
            request,
            buffer,
            slot,
        })
    }

    /// Wait for `posted`'s message, then receive its rest, if its length
    /// header says more follows, from its sender with the tag `rest_tag`
    /// reads from the first part: `(its source, the whole message)`.
    /// `Err` when `watch` (asked every [`CHECK_EVERY`](super::CHECK_EVERY)) gives up; the
    /// receive is then cancelled.
    pub fn receive_message(
        &self,
        mut posted: Posted<'_>,
        watch: &dyn Fn() -> Option<String>,
        rest_tag: impl FnOnce(&[u8]) -> Option<i32>,
    ) -> Result<(i32, Vec<u8>), WireError> {
        let m = &self.mpi;
        // Taken: `posted`'s drop has nothing left to cancel.
        let request = std::mem::replace(&mut posted.request, m.predefined.request_null);
        let mut buffer = std::mem::take(&mut posted.buffer);
        let status = match self.complete("MPI_Test (receive)", request, watch) {
            Ok(status) => status,
            Err(err) => return Err(err.keep(buffer)),
        };
        let count = usize::try_from(status.count)
            .unwrap_or(usize::MAX)
            .min(posted.slot);
        // SAFETY: MPI wrote `count` bytes, within the reserved slot.
        unsafe { buffer.set_len(count) };
        let said = protocol::message_len(&buffer).unwrap_or(0);
        if count < posted.slot || said <= count as u64 || said > protocol::MAX_MESSAGE {
            // Whole, or malformed (its reader says so): no sender of
            // ours sends a rest past `MAX_MESSAGE`.
            return Ok((status.source, buffer));
        }
        let Some(tag) = rest_tag(&buffer) else {
            return Ok((status.source, buffer));
        };
        let rest = usize::try_from(said - count as u64).unwrap_or(usize::MAX);
        if let Err(err) = buffer.try_reserve_exact(rest) {
            // The sender waits until its rest is taken: taken and dropped,
            // fragment by fragment, and the first part returned alone (its
            // reader finds it shorter than its header says).
            tracing::warn!(
                "a message of {said} bytes from {} cannot be held here ({err}): dropped",
                self.describe(status.source)
            );
            self.drain(status.source, tag, rest)?;
            return Ok((status.source, buffer));
        }
        // SAFETY: room for `rest` bytes after the `count` received.
        let received = unsafe {
            self.recv_fragments(
                status.source,
                tag,
                buffer.as_mut_ptr().add(count).cast(),
                rest,
                protocol::REST_FRAGMENT,
            )
        };
        if let Err(err) = received {
            return Err(err.keep(buffer));
        }
        // SAFETY: MPI wrote the `rest` bytes after the first `count`.
        unsafe { buffer.set_len(count + rest) };
        Ok((status.source, buffer))
    }

    /// Receive and drop the `len` bytes of a message's rest from `source`
    /// with `tag`, fragment by fragment into one scratch fragment (16 MiB:
    /// what a server short of memory can still find).
    fn drain(&self, source: i32, tag: i32, len: usize) -> Result<(), WireError> {
        let fragment = protocol::REST_FRAGMENT;
        let mut scratch: Vec<u8> = Vec::new();
        scratch
            .try_reserve_exact(len.min(fragment))
            .map_err(|source_err| Failure::NoRoom {
                len,
                from: self.describe(source),
                source: source_err,
            })?;
        let mut left = len;
        while left > 0 {
            let n = left.min(fragment);
            // SAFETY: `scratch` has room for `n` bytes.
            let received = unsafe {
                self.recv_fragments(source, tag, scratch.as_mut_ptr().cast(), n, fragment)
            };
            if let Err(err) = received {
                return Err(err.keep(scratch));
            }
            left -= n;
        }
        Ok(())
    }

    /// Send `message` (a protocol message: it begins with its length) to
    /// `dest`: its first `slot` bytes with `tag` (the part the receiver's
    /// posted receive takes), the rest, if any, with `rest_tag`.
    pub fn send_message(
        &self,
        dest: i32,
        tag: i32,
        rest_tag: i32,
        slot: usize,
        message: &[u8],
    ) -> Result<(), WireError> {
        if message.len() as u64 > protocol::MAX_MESSAGE {
            return Err(Failure::TooLong { len: message.len() }.into());
        }
        let first = message.len().min(slot);
        self.send(dest, tag, &message[..first])?;
        if first < message.len() {
            let rest = &message[first..];
            // SAFETY: `rest` is readable for its length.
            unsafe {
                self.send_fragments(
                    dest,
                    rest_tag,
                    rest.as_ptr().cast(),
                    rest.len(),
                    protocol::REST_FRAGMENT,
                )?
            };
        }
        Ok(())
    }
}

/// A receive posted with [`World::post`], its buffer MPI's until the
/// receive completes: finished by [`World::receive_message`]; dropped
/// unfinished, it is cancelled (and its buffer kept for the rest of the
/// process if MPI does not confirm it).
#[must_use = "a posted receive is finished by World::receive_message"]
pub struct Posted<'w> {
    world: &'w World,
    request: mpi::Handle,
    buffer: Vec<u8>,
    slot: usize,
}

impl Drop for Posted<'_> {
    fn drop(&mut self) {
        if self.world.mpi.is_request_null(self.request) {
            return;
        }
        // A message that completed it meanwhile is dropped with it: a
        // posted receive is dropped only when its request could not be
        // sent, so no reply is due.
        if matches!(
            self.world.abandon(&mut self.request),
            Abandoned::Unconfirmed
        ) {
            error::keep_forever(std::mem::take(&mut self.buffer));
        }
    }
}
