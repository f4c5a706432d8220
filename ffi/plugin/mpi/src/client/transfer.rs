//! Bulk data: copies to and from a server's devices, straight from and
//! into the program's memory, and copies between two servers' devices.
use super::{CallError, Client, ExchangeError, Side};
use crate::protocol::{self, Op, Reply, ReplyError, Request};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

impl Client {
    /// Copy `size` bytes from `host` to `ptr` on the server's `device`.
    ///
    /// # Safety
    /// `host` is readable for `size` bytes.
    pub unsafe fn submit(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        host: *const c_void,
        size: usize,
    ) -> Result<(), CallError> {
        self.kernel_exit.call(|| {
            // SAFETY: per this function's contract.
            unsafe { self.submit_now(server, device, ptr, host, size) }
        })
    }

    /// [`Client::submit`], counted in flight by the caller.
    ///
    /// # Safety
    /// `host` is readable for `size` bytes.
    unsafe fn submit_now(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        host: *const c_void,
        size: usize,
    ) -> Result<(), CallError> {
        self.check_open()?;
        let rank = self.servers[server].rank;
        let reply_tag = self.fresh_tag();
        let op = Op::Submit {
            device,
            ptr,
            size: size as u64,
        };
        let reply = self.with_server(rank, || {
            self.send_request(rank, &Request { reply_tag, op })?;
            // SAFETY: per this function's contract.
            unsafe { self.world.send_raw(rank, reply_tag, host, size)? };
            let posted = self.post_reply(rank, reply_tag)?;
            self.reply(rank, reply_tag, posted)
        })?;
        Ok(Reply::<()>::payload(&reply)?)
    }

    /// Copy each of `ranges` (device address on the server's `device`,
    /// host address, bytes) to the host, in one request.
    ///
    /// # Safety
    /// Each host range is writable for its bytes.
    pub unsafe fn retrieve_batch(
        &self,
        server: usize,
        device: u32,
        ranges: &[(u64, *mut c_void, usize)],
    ) -> Result<(), CallError> {
        self.kernel_exit.call(|| {
            // SAFETY: per this function's contract.
            unsafe { self.retrieve_batch_now(server, device, ranges) }
        })
    }

    /// [`Client::retrieve_batch`], counted in flight by the caller.
    ///
    /// # Safety
    /// Each host range is writable for its bytes.
    unsafe fn retrieve_batch_now(
        &self,
        server: usize,
        device: u32,
        ranges: &[(u64, *mut c_void, usize)],
    ) -> Result<(), CallError> {
        self.check_open()?;
        let rank = self.servers[server].rank;
        let reply_tag = self.fresh_tag();
        let wanted: Vec<(u64, u64)> = ranges
            .iter()
            .map(|&(ptr, _, size)| (ptr, size as u64))
            .collect();
        // Small enough, the bytes come inside the reply, which the posted
        // receive then takes whole.
        let slot = protocol::retrieve_reply_slot(&wanted);
        let inline = protocol::retrieve_inline(&wanted);
        let op = Op::RetrieveBatch {
            device,
            ranges: wanted,
        };
        self.with_server(rank, || {
            self.send_request(rank, &Request { reply_tag, op })?;
            let posted = self.world.post(rank, reply_tag, Vec::new(), slot)?;
            let reply = self.reply(rank, reply_tag, posted)?;
            let mut bytes = protocol::read_reply(&reply)?;
            for &(_, host, size) in ranges {
                if inline {
                    let from = bytes.raw(size).map_err(ReplyError::from)?;
                    // SAFETY: per this function's contract, `host` is
                    // writable for `size` bytes; `from` is the reply's.
                    unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), host.cast(), size) };
                } else {
                    // SAFETY: per this function's contract.
                    unsafe { self.world.recv_raw(rank, reply_tag, host, size)? };
                }
            }
            Ok(())
        })
    }

    /// Copy `size` bytes between devices of two servers: straight from
    /// one to the other when this is the servers' only program rank;
    /// through this process (`Client::relay`) when another program rank
    /// may ask the same two servers for the opposite copy at the same time.
    pub fn exchange(
        &self,
        (src, src_device, src_ptr): (usize, u32, u64),
        (dst, dst_device, dst_ptr): (usize, u32, u64),
        size: u64,
    ) -> Result<(), ExchangeError> {
        self.kernel_exit.call(|| {
            self.exchange_now((src, src_device, src_ptr), (dst, dst_device, dst_ptr), size)
        })
    }

    fn exchange_now(
        &self,
        (src, src_device, src_ptr): (usize, u32, u64),
        (dst, dst_device, dst_ptr): (usize, u32, u64),
        size: u64,
    ) -> Result<(), ExchangeError> {
        use Side::{Destination, Source};
        self.check_open().map_err(|e| e.on(Source))?;
        if src == dst {
            let op = Op::ExchangeLocal {
                src: src_device,
                src_ptr,
                dst: dst_device,
                dst_ptr,
                size,
            };
            // One server: its error is the source's (the same device
            // numbering names both).
            return self
                .call_server_ok(src, op)
                .map(drop)
                .map_err(|e| e.on(Source));
        }
        if self.other_clients {
            return self.relay((src, src_device, src_ptr), (dst, dst_device, dst_ptr), size);
        }
        let _one_at_a_time = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        let (src_rank, dst_rank) = (self.servers[src].rank, self.servers[dst].rank);
        let tag = self
            .world
            .exchange_tag(self.next_exchange.fetch_add(1, Ordering::Relaxed));
        let (out_tag, in_tag) = (self.fresh_tag(), self.fresh_tag());
        let out = Op::ExchangeOut {
            device: src_device,
            ptr: src_ptr,
            size,
            peer: dst_rank,
            tag,
        };
        let inn = Op::ExchangeIn {
            device: dst_device,
            ptr: dst_ptr,
            size,
            peer: src_rank,
            tag,
        };
        // The copies gathered for either go first, both before either is
        // asked: a server asked while its peer was not (its copies could
        // not be sent) would wait for ever for a live peer's data.
        self.with_server(src_rank, || Ok(()))
            .map_err(|e| e.on(Source))?;
        self.with_server(dst_rank, || Ok(()))
            .map_err(|e| e.on(Destination))?;
        // The destination is asked only once the source was: a source
        // asked and a destination that could not be (found dead) is fine,
        // the source watches its peer. Each one asked has its reply
        // awaited, whatever happens to the other: a reply left unreceived
        // would be taken for a later one with the same tag.
        // Both asked, or neither, before a close tells them to exit: a
        // source asked whose destination is then refused would wait for
        // its peer's data until that peer is gone.
        let open = self.open_for_sending().map_err(|e| e.on(Source))?;
        let sent = self.with_rank(src_rank, || {
            let request = Request {
                reply_tag: out_tag,
                op: out,
            };
            self.send_request_anyway(src_rank, &request)?;
            self.post_reply(src_rank, out_tag)
        });
        // Not asked when the source could not be: the source's error is
        // the call's.
        let asked = sent.is_ok().then(|| {
            self.with_rank(dst_rank, || {
                let request = Request {
                    reply_tag: in_tag,
                    op: inn,
                };
                self.send_request_anyway(dst_rank, &request)?;
                self.post_reply(dst_rank, in_tag)
            })
        });
        drop(open);
        // A server that was not asked sends no reply; one that was asked
        // replies (with an error if its peer died: it watches it too).
        let sent = sent
            .and_then(|posted| self.with_rank(src_rank, || self.reply(src_rank, out_tag, posted)));
        let received = asked.map(|asked| {
            asked.and_then(|posted| {
                self.with_rank(dst_rank, || self.reply(dst_rank, in_tag, posted))
            })
        });
        // The destination's own death first: the source, which watches
        // its peer, then fails too, and its error would name itself.
        let received = match received {
            Some(Err(err)) if err.tells_death() => return Err(err.on(Destination)),
            other => other,
        };
        let sent = sent.map_err(|e| e.on(Source))?;
        Reply::<()>::payload(&sent).map_err(|e| CallError::from(e).on(Source))?;
        match received {
            Some(received) => {
                let received = received.map_err(|e| e.on(Destination))?;
                Reply::<()>::payload(&received).map_err(|e| CallError::from(e).on(Destination))
            }
            None => Ok(()),
        }
    }

    /// A copy between two servers made as a retrieve from one and a submit
    /// to the other, [`RELAY_CHUNK`] at a time through a buffer of this
    /// process. A server serves one request at a time, each to its end: two
    /// servers each asked to send to the other (program rank 0 copying from
    /// A to B while rank 1 copies from B to A) would each wait in its send
    /// for the other for ever. Relayed, no server ever waits for another,
    /// so crossing copies cannot deadlock; the cost is that the bytes cross
    /// the network twice.
    fn relay(
        &self,
        (src, src_device, src_ptr): (usize, u32, u64),
        (dst, dst_device, dst_ptr): (usize, u32, u64),
        size: u64,
    ) -> Result<(), ExchangeError> {
        let chunk = size.min(RELAY_CHUNK) as usize;
        // Capacity only, never length: MPI writes each piece through the
        // raw pointer before the submit reads it, so nothing is zeroed (up
        // to 64 MiB a copy) and no slice of unwritten bytes is made.
        let mut buffer: Vec<u8> = Vec::new();
        buffer
            .try_reserve_exact(chunk)
            .map_err(|source| CallError::NoRelayRoom { len: chunk, source }.on(Side::Source))?;
        for (offset, n) in chunks(size, chunk as u64) {
            let into = buffer.as_mut_ptr().cast::<c_void>();
            // SAFETY: `buffer`'s allocation holds `chunk` >= `n` bytes,
            // written by the retrieve before the submit reads them, and
            // outlives both transfers: on an error MPI may still use it,
            // the error keeps it for good.
            let step = unsafe {
                self.retrieve_batch_now(src, src_device, &[(src_ptr + offset, into, n)])
                    .map_err(|e| e.on(Side::Source))
                    .and_then(|()| {
                        self.submit_now(dst, dst_device, dst_ptr + offset, into.cast_const(), n)
                            .map_err(|e| e.on(Side::Destination))
                    })
            };
            if let Err(ExchangeError { side, error }) = step {
                return Err(error.keep(buffer).on(side));
            }
        }
        Ok(())
    }
}

/// The most a copy between two servers holds in this process at once when
/// it is relayed ([`Client::relay`]).
pub const RELAY_CHUNK: u64 = 64 << 20;

/// The (offset, length) pieces of `size` bytes, each at most `chunk`.
fn chunks(size: u64, chunk: u64) -> impl Iterator<Item = (u64, usize)> {
    (0..size)
        .step_by(chunk.max(1) as usize)
        .map(move |offset| (offset, (size - offset).min(chunk) as usize))
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn a_relayed_copy_is_cut_into_whole_pieces_that_cover_it_once() {
        let pieces: Vec<_> = chunks(10, 4).collect();
        assert_eq!(pieces, [(0, 4), (4, 4), (8, 2)]);
        assert_eq!(chunks(8, 4).collect::<Vec<_>>(), [(0, 4), (4, 4)]);
        assert_eq!(chunks(3, 64).collect::<Vec<_>>(), [(0, 3)]);
        assert_eq!(chunks(0, 64).count(), 0);
    }
}
