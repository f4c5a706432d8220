//! The program's side of the protocol: one request, one reply, from any
//! thread.
use crate::error::WireError;
use crate::kernel_exit::KernelExit;
use crate::mpi;
use crate::protocol::{
    self, InlineCopy, Op, Request, INLINE_BATCH_BASE, INLINE_BATCH_LIMIT, INLINE_COPY_FIELDS,
    INLINE_SUBMIT_LIMIT, NO_REPLY_TAG, REPLY_SLOT, REQUEST_SLOT, REQUEST_TAG,
};
use crate::world::{Posted, Role, World};
use omptarget_plugin_kit::state_lock::{self, ReadGuard, ReadMostly};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Mutex;

/// One device server, as its `Hello` reply describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its rank in the plugin's communicator.
    pub rank: i32,
    /// How many devices it serves.
    pub devices: u32,
    /// Its host name.
    pub host: String,
    /// The plugin it serves them with (file name).
    pub plugin: String,
    /// The ELF machine of the images that plugin runs (62: x86_64, 190: CUDA).
    pub machine: u16,
}

/// The connection to every server of the job.
pub struct Client {
    world: World,
    servers: Vec<Server>,
    next_tag: AtomicI32,
    /// Numbers the copies between servers ([`World::exchange_tag`]).
    next_exchange: AtomicU32,
    /// Why no request may be sent any more (the servers were told to exit).
    closed: Mutex<Option<String>>,
    /// Whether `closed` is set: read by every call without a lock.
    is_closed: AtomicBool,
    /// Held (read) by a call from its check that the client is open until
    /// its messages to servers are sent; written by [`Client::close_from`]
    /// to mark the client closed. So every request either goes before the
    /// servers are told to exit, and is answered (MPI keeps the messages
    /// of one rank to one server on the request tag in the order the
    /// lock gives them), or is refused here: none goes after a server's
    /// `Exit`, which that server would never answer. It would not die
    /// either (its `MPI_Finalize` waits for this rank's), so the call
    /// would wait for ever.
    sending: ReadMostly<()>,
    /// Device-to-device copies between two servers run one at a time: two
    /// servers sending to each other at once, each blocked in its send,
    /// would wait for each other for ever.
    exchanges: Mutex<()>,
    /// The servers found dead, by rank, and how they were found: every
    /// later call on their devices fails at once with that text.
    dead: RankNotes,
    /// The one-way copies gathered for each server, by rank.
    gathered: Vec<Gathered>,
    /// Servers whose gathered copies could not be sent, by rank, and why:
    /// the copies' own calls returned success, so every later call on
    /// that server fails with this text instead of computing on stale
    /// data. (A server found dead is in `dead` too.)
    lost: RankNotes,
    /// Whether a kernel of this rank called `exit`, and the calls in
    /// flight meanwhile.
    kernel_exit: KernelExit,
}

/// A note (why) per server rank, read by every call: a flag says
/// whether any is kept, so that the usual answer, none, takes no lock.
#[derive(Default)]
struct RankNotes {
    notes: Mutex<HashMap<i32, String>>,
    any: AtomicBool,
}

impl RankNotes {
    /// The note on `rank`, if any.
    fn get(&self, rank: i32) -> Option<String> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&rank)
            .cloned()
    }

    /// Note `why` on `rank`, unless it has a note already.
    fn note(&self, rank: i32, why: &str) {
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(rank)
            .or_insert_with(|| why.to_owned());
        self.any.store(true, Ordering::Release);
    }
}

/// One-way copies to one server not sent yet ([`Client::submit_inline`]):
/// they go as one message before that server's next request, or when
/// they fill one.
#[derive(Default)]
struct Gathered {
    copies: Mutex<GatheredCopies>,
    /// Whether `copies` holds any: read by every request without a lock.
    /// Cleared only once they are sent, so that a request that finds it
    /// clear goes after them.
    pending: AtomicBool,
}

#[derive(Default)]
struct GatheredCopies {
    copies: Vec<InlineCopy>,
    /// Their size in a `SubmitInline`, besides its base.
    bytes: usize,
}

impl Client {
    /// Join the job as a program rank and greet every server. `Ok(None)`:
    /// the job has no server.
    pub fn connect() -> Result<Option<Client>, String> {
        // Claimed before MPI starts: a wrapper that finds its mark gone
        // once this process ended must not join as this rank again.
        crate::stand_in::taking_the_rank();
        let world = World::join(Role::Program)?;
        let ranks = world.ranks(Role::Server);
        let mut client = Client {
            world,
            servers: Vec::new(),
            next_tag: AtomicI32::new(0),
            next_exchange: AtomicU32::new(0),
            closed: Mutex::new(None),
            is_closed: AtomicBool::new(false),
            sending: ReadMostly::new(()),
            exchanges: Mutex::new(()),
            dead: RankNotes::default(),
            gathered: Vec::new(),
            lost: RankNotes::default(),
            kernel_exit: KernelExit::new(),
        };
        client.gathered = (0..client.world.roles.len())
            .map(|_| Gathered::default())
            .collect();
        if ranks.is_empty() {
            client.world.leave()?;
            return Ok(None);
        }
        if let Err(err) = client.world.check_thread_level() {
            // Still one thread here: tell the servers this rank is done, so
            // that the job can end.
            return Err(client.give_up(&ranks, err));
        }
        let mut servers = Vec::with_capacity(ranks.len());
        for &rank in &ranks {
            let greeted = client.call_rank(rank, Op::Hello).and_then(|reply| {
                let mut r = protocol::read_reply(&reply)?;
                (|| -> Result<Server, protocol::Malformed> {
                    Ok(Server {
                        rank,
                        devices: r.u32()?,
                        host: r.string()?,
                        plugin: r.string()?,
                        machine: r.u32()? as u16,
                    })
                })()
                .map_err(|e| format!("rank {rank}: {e}"))
            });
            match greeted {
                Ok(server) => servers.push(server),
                Err(err) => {
                    // Every server still waits for this rank's Exit, and
                    // MPI is ours to finalise: end the job cleanly.
                    return Err(client.give_up(&ranks, err));
                }
            }
        }
        client.servers = servers;
        Ok(Some(client))
    }

    /// Joining failed with `err`: tell every server this rank is done and
    /// leave MPI, so that the job can end; `err` back.
    fn give_up(mut self, ranks: &[i32], err: String) -> String {
        self.servers = ranks
            .iter()
            .map(|&rank| Server {
                rank,
                devices: 0,
                host: String::new(),
                plugin: String::new(),
                machine: 0,
            })
            .collect();
        self.close(&err);
        let _ = self.world.leave();
        err
    }

    /// The servers, in rank order.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// This rank's number.
    pub fn rank(&self) -> i32 {
        self.world.rank
    }

    /// A reply tag, in turn over [`World::reply_tags`]: with Open MPI's
    /// tags, a tag comes back after 2^30 requests, so one still waited for
    /// is not handed out again in practice (with MPI's guaranteed 32767,
    /// after 32752).
    fn fresh_tag(&self) -> i32 {
        let tags = self.world.reply_tags();
        let span = (*tags.end() - *tags.start()) as i64 + 1;
        let n = self.next_tag.fetch_add(1, Ordering::Relaxed) as u32 as i64;
        (*tags.start() as i64 + n % span) as i32
    }

    /// Whether the servers were told to exit ([`Client::close`]): each
    /// tore its devices down then, freeing whatever was left on them.
    pub fn is_closed(&self) -> bool {
        self.is_closed.load(Ordering::Acquire)
    }

    /// [`Client::check_open`], and the client kept open while the guard
    /// is held: a call's messages to servers are sent under it (see
    /// `sending`). Not taken twice by one thread, nor around a wait for a
    /// reply (a close waits for every guard).
    fn open_for_sending(&self) -> Result<ReadGuard<'_, ()>, String> {
        let open = state_lock::read(&self.sending);
        self.check_open()?;
        Ok(open)
    }

    fn check_open(&self) -> Result<(), String> {
        if !self.is_closed() {
            return Ok(());
        }
        match &*self.closed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(why) => Err(format!("the remote devices are gone: {why}")),
            None => Ok(()),
        }
    }

    /// Why server rank `rank` is known dead, if it is.
    pub fn dead(&self, rank: i32) -> Option<String> {
        self.dead.get(rank)
    }

    /// Run `f`, an exchange of messages with server `rank`: at once `Err`
    /// if it is known dead; and when `f` fails and the server is found
    /// dead, mark it so (the error then says it died).
    fn with_rank<T>(&self, rank: i32, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        if let Some(why) = self.dead(rank) {
            return Err(why);
        }
        let result = f();
        if let Err(err) = &result {
            if let Some(why) = self.world.death_of(rank) {
                tracing::warn!("{why}");
                self.dead.note(rank, &why);
                if !err.contains(&why) {
                    return Err(format!("{why}; {err}"));
                }
            }
        }
        result
    }

    /// [`Client::with_rank`], the one-way copies gathered for server
    /// `rank` sent first: every exchange with a server that follows a copy
    /// to it (a launch, a copy back, a free) finds the copy done.
    fn with_server<T>(
        &self,
        rank: i32,
        f: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        if let Some(why) = self.lost.get(rank) {
            return Err(why);
        }
        self.with_rank(rank, || {
            {
                let _open = self.open_for_sending()?;
                self.flush(rank)?;
            }
            f()
        })
    }

    /// Send the one-way copies gathered for server `rank`, if any.
    fn flush(&self, rank: i32) -> Result<(), String> {
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
    fn send_gathered(
        &self,
        rank: i32,
        gathered: &Gathered,
        copies: &mut GatheredCopies,
    ) -> Result<(), String> {
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
            Err(WireError::Failed(format!(
                "one-way copies of {} bytes exceed the request slot",
                message.len()
            )))
        } else {
            self.world.send(rank, REQUEST_TAG, &message)
        };
        gathered.pending.store(false, Ordering::Release);
        sent.map_err(|err| {
            let why = format!(
                "copies to {} that had returned could not be sent: {err}",
                self.world.describe(rank)
            );
            self.lost.note(rank, &why);
            why
        })
    }

    /// Send `op` to server `server` and wait for its reply message.
    pub fn call(&self, server: usize, op: Op) -> Result<Vec<u8>, String> {
        self.kernel_exit.call(|| self.call_server(server, op))
    }

    fn call_server(&self, server: usize, op: Op) -> Result<Vec<u8>, String> {
        self.check_open()?;
        self.call_rank(self.servers[server].rank, op)
    }

    fn call_rank(&self, rank: i32, op: Op) -> Result<Vec<u8>, String> {
        self.with_server(rank, || self.request_reply(rank, op))
    }

    /// Send `op` to server `rank` and wait for its reply, nothing sent
    /// before it.
    fn request_reply(&self, rank: i32, op: Op) -> Result<Vec<u8>, String> {
        let reply_tag = self.fresh_tag();
        self.send_request(rank, &Request { reply_tag, op })?;
        let posted = self.post_reply(rank, reply_tag)?;
        self.reply(rank, reply_tag, posted)
    }

    /// Tell server `rank` to exit and wait for its acknowledgement: the
    /// close's own request, sent once the client is closed.
    fn exit_request(&self, rank: i32) -> Result<Vec<u8>, String> {
        let reply_tag = self.fresh_tag();
        let request = Request {
            reply_tag,
            op: Op::Exit,
        };
        self.send_request_anyway(rank, &request)?;
        let posted = self.post_reply(rank, reply_tag)?;
        self.reply(rank, reply_tag, posted)
    }

    /// Post the receive of the reply on `tag` from server `rank`, just
    /// after its request went: while the server works on it (the
    /// receive's cost off the round trip's path), so that the reply lands
    /// straight in its buffer. One that came first waits in MPI's queue
    /// and is matched all the same. Dropped unfinished, it is cancelled.
    fn post_reply(&self, rank: i32, tag: i32) -> Result<Posted<'_>, String> {
        Ok(self.world.post(rank, tag, Vec::new(), REPLY_SLOT)?)
    }

    /// Send `request` to server `rank`, a call's, while the client is
    /// open ([`Client::open_for_sending`]).
    fn send_request(&self, rank: i32, request: &Request) -> Result<(), String> {
        let _open = self.open_for_sending()?;
        self.send_request_anyway(rank, request)
    }

    /// Send `request` to server `rank`: its first [`REQUEST_SLOT`] bytes
    /// on the request tag, the rest (a long one: an image) on its reply
    /// tag.
    fn send_request_anyway(&self, rank: i32, request: &Request) -> Result<(), String> {
        let message = request.encode();
        Ok(self
            .world
            .send_message(rank, REQUEST_TAG, request.reply_tag, REQUEST_SLOT, &message)?)
    }

    /// The reply `posted` receives from server `rank` (its rest, if long,
    /// on the same tag).
    fn reply(&self, rank: i32, tag: i32, posted: Posted<'_>) -> Result<Vec<u8>, String> {
        let watch = || self.world.death_of(rank);
        let reply = self.world.receive_message(posted, &watch, |_| Some(tag))?.1;
        if protocol::kernel_exit_status(&reply).is_some() {
            // The launch whose kernel called exit: its caller exits.
            self.kernel_exit.note();
        } else if protocol::exiting_of(&reply).is_some_and(|(_, client)| client == self.rank()) {
            // Another request refused by that kernel's server, which may
            // reach this thread before the launch's reply reaches its own:
            // a failure (whatever the call), and the process is exiting.
            self.kernel_exit.note();
            return Err(protocol::read_reply(&reply).err().unwrap_or_default());
        }
        Ok(reply)
    }

    /// Whether a kernel of this rank called `exit` (a reply said so).
    pub fn kernel_exit(&self) -> &KernelExit {
        &self.kernel_exit
    }

    /// `call`, then the reply's payload or the server's error.
    pub fn call_ok(&self, server: usize, op: Op) -> Result<Vec<u8>, String> {
        self.kernel_exit.call(|| self.call_server_ok(server, op))
    }

    fn call_server_ok(&self, server: usize, op: Op) -> Result<Vec<u8>, String> {
        let reply = self.call_server(server, op)?;
        protocol::read_reply(&reply)?;
        Ok(reply)
    }

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
    ) -> Result<(), String> {
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
    ) -> Result<(), String> {
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
        protocol::read_reply(&reply).map(drop)
    }

    /// Copy `size` bytes from `ptr` on the server's `device` to `host`.
    ///
    /// # Safety
    /// `host` is writable for `size` bytes.
    pub unsafe fn retrieve(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        host: *mut c_void,
        size: usize,
    ) -> Result<(), String> {
        self.kernel_exit.call(|| {
            // SAFETY: per this function's contract.
            unsafe { self.retrieve_now(server, device, ptr, host, size) }
        })
    }

    /// [`Client::retrieve`], counted in flight by the caller.
    ///
    /// # Safety
    /// `host` is writable for `size` bytes.
    unsafe fn retrieve_now(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        host: *mut c_void,
        size: usize,
    ) -> Result<(), String> {
        self.check_open()?;
        let rank = self.servers[server].rank;
        let reply_tag = self.fresh_tag();
        let op = Op::Retrieve {
            device,
            ptr,
            size: size as u64,
        };
        self.with_server(rank, || {
            self.send_request(rank, &Request { reply_tag, op })?;
            let posted = self.post_reply(rank, reply_tag)?;
            let reply = self.reply(rank, reply_tag, posted)?;
            protocol::read_reply(&reply)?;
            // SAFETY: per this function's contract.
            unsafe { self.world.recv_raw(rank, reply_tag, host, size)? };
            Ok(())
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
    ) -> Result<(), String> {
        self.kernel_exit
            .call(|| self.submit_inline_now(server, device, ptr, data))
    }

    fn submit_inline_now(
        &self,
        server: usize,
        device: u32,
        ptr: u64,
        data: Vec<u8>,
    ) -> Result<(), String> {
        // Before the copies' lock (a flush takes them in that order): a
        // full batch is sent here.
        let _open = self.open_for_sending()?;
        if data.len() > INLINE_SUBMIT_LIMIT {
            return Err(format!(
                "a one-way copy of {} bytes (at most {INLINE_SUBMIT_LIMIT})",
                data.len()
            ));
        }
        let rank = self.servers[server].rank;
        if let Some(why) = self.dead(rank) {
            return Err(why);
        }
        let gathered = &self.gathered[rank as usize];
        let mut copies = gathered.copies.lock().unwrap_or_else(|p| p.into_inner());
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
    ) -> Result<(), String> {
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
    ) -> Result<(), String> {
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
                    let from = bytes.raw(size).map_err(|e| e.to_string())?;
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

    /// Copy `size` bytes between devices of two servers, straight from
    /// one to the other.
    pub fn exchange(
        &self,
        (src, src_device, src_ptr): (usize, u32, u64),
        (dst, dst_device, dst_ptr): (usize, u32, u64),
        size: u64,
    ) -> Result<(), String> {
        self.kernel_exit.call(|| {
            self.exchange_now((src, src_device, src_ptr), (dst, dst_device, dst_ptr), size)
        })
    }

    fn exchange_now(
        &self,
        (src, src_device, src_ptr): (usize, u32, u64),
        (dst, dst_device, dst_ptr): (usize, u32, u64),
        size: u64,
    ) -> Result<(), String> {
        self.check_open()?;
        if src == dst {
            let op = Op::ExchangeLocal {
                src: src_device,
                src_ptr,
                dst: dst_device,
                dst_ptr,
                size,
            };
            return self.call_server_ok(src, op).map(drop);
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
        self.with_server(src_rank, || Ok(()))?;
        self.with_server(dst_rank, || Ok(()))?;
        // The destination is asked only once the source was: a source
        // asked and a destination that could not be (found dead) is fine,
        // the source watches its peer. Each one asked has its reply
        // awaited, whatever happens to the other: a reply left unreceived
        // would be taken for a later one with the same tag.
        // Both asked, or neither, before a close tells them to exit: a
        // source asked whose destination is then refused would wait for
        // its peer's data until that peer is gone.
        let open = self.open_for_sending()?;
        let sent = self.with_rank(src_rank, || {
            let request = Request {
                reply_tag: out_tag,
                op: out,
            };
            self.send_request_anyway(src_rank, &request)?;
            self.post_reply(src_rank, out_tag)
        });
        let asked = match &sent {
            Ok(_) => self.with_rank(dst_rank, || {
                let request = Request {
                    reply_tag: in_tag,
                    op: inn,
                };
                self.send_request_anyway(dst_rank, &request)?;
                self.post_reply(dst_rank, in_tag)
            }),
            Err(err) => Err(err.clone()),
        };
        drop(open);
        // A server that was not asked sends no reply; one that was asked
        // replies (with an error if its peer died: it watches it too).
        let sent = sent
            .and_then(|posted| self.with_rank(src_rank, || self.reply(src_rank, out_tag, posted)));
        let received = asked
            .and_then(|posted| self.with_rank(dst_rank, || self.reply(dst_rank, in_tag, posted)));
        protocol::read_reply(&sent?)?;
        protocol::read_reply(&received?).map(drop)
    }

    /// Tell every server this program rank is done and wait for each
    /// one's acknowledgement (its teardown's summary); then refuse every
    /// later request with `why`. Idempotent. A server found dead is not
    /// told: its acknowledgement is an error that says what it took with
    /// it.
    pub fn close(&self, why: &str) -> Vec<(i32, Result<String, String>)> {
        self.close_from(None, why)
    }

    /// [`Client::close`], server rank `first` told first: the server a
    /// kernel's `exit` is ending, which refuses every request until told
    /// (a live server may wait, in a copy to it, for it to be gone).
    pub fn close_from(&self, first: Option<i32>, why: &str) -> Vec<(i32, Result<String, String>)> {
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
                acks.push((
                    server.rank,
                    Err(format!(
                        "{why}: not told to exit; what this program left on its devices went with it"
                    )),
                ));
                continue;
            }
            let rank = server.rank;
            // The copies gathered for it first, if they can go; told to
            // exit whatever happened to them, or it would wait for ever.
            let flushed = self.with_rank(rank, || self.flush(rank));
            let lost = self.lost.get(rank);
            let ack = self
                .with_rank(rank, || self.exit_request(rank))
                .and_then(|reply| {
                    let mut r = protocol::read_reply(&reply)?;
                    r.string().map_err(|e| e.to_string())
                });
            let ack = match (flushed.err().or(lost), ack) {
                (None, ack) => ack,
                (Some(lost), Ok(summary)) => Err(format!("{lost} (then exited: {summary})")),
                (Some(lost), Err(err)) => Err(format!("{lost}; {err}")),
            };
            acks.push((rank, ack));
        }
        acks
    }

    /// The world, for the finalize hook.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Close (if not yet) and leave the job: free the communicator, and
    /// finalise MPI if the plugin initialised it.
    pub fn leave(self) -> Result<(), String> {
        self.world.leave()
    }
}

/// Whether [`Client::connect`] should be tried at all: only in a process
/// an MPI launcher started (no library is opened otherwise).
pub fn should_connect() -> bool {
    mpi::job_may_have_servers()
}
