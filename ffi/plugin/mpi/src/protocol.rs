//! The messages between the plugin (on the program's rank) and a device
//! server (`omptarget-mpi-device`, on another rank), on the plugin's own
//! communicator (a duplicate of `MPI_COMM_WORLD`).
//!
//! * A request goes to the server with tag [`REQUEST_TAG`]. It names the
//!   tag of its reply, which the client picks unique among its requests in
//!   flight, so several threads can wait for replies from one server at
//!   once without taking each other's.
//! * The reply comes back with that tag: a status word, then the payload,
//!   or the server's error text.
//! * Both are received into receives posted before they come (the
//!   server's for its next request, the client's for its reply), which
//!   take at most [`REQUEST_SLOT`] and [`REPLY_SLOT`] bytes: every request
//!   and reply begins with its whole length ([`LENGTH_HEADER`]), and what
//!   does not fit its slot follows on the reply tag
//!   (`World::send_message`, `World::receive_message`).
//! * Bulk data travels as messages of its own on the reply tag, straight
//!   from and into the program's buffer, in fragments of at most
//!   [`FRAGMENT`] bytes (MPI counts are `int`). A submit sends its data
//!   after the request; a retrieve's data follows its (successful) reply,
//!   except a `RetrieveBatch` of at most [`INLINE_RETRIEVE_LIMIT`] bytes,
//!   whose bytes come inside its reply ([`reply_slot`]). Copies to a
//!   device of up to [`INLINE_SUBMIT_LIMIT`] bytes travel inside a
//!   one-way `SubmitInline`, several gathered into one.
//!   MPI keeps messages of one sender, tag and communicator in order.
//! * A device-to-device copy between two servers is two requests (one to
//!   each) naming a fresh tag: the servers move the data between
//!   themselves, not through the program's rank.
//!
//! Encoding: little-endian fixed-size fields, strings and blobs as a `u64`
//! length then the bytes. A malformed message is an error of its own,
//! never a panic: a server answers it on the reply tag after its length (if
//! it has one) and goes on.
use std::fmt;

/// The most bytes a `RetrieveBatch` carries back inside its reply rather
/// than as messages of their own (one message instead of one per range).
pub const INLINE_RETRIEVE_LIMIT: usize = 64 << 10;

/// Whether a `RetrieveBatch` of `ranges` ((device address, bytes) each)
/// carries its bytes inside its reply.
pub fn retrieve_inline(ranges: &[(u64, u64)]) -> bool {
    ranges
        .iter()
        .try_fold(0u64, |total, &(_, size)| total.checked_add(size))
        .is_some_and(|total| total <= INLINE_RETRIEVE_LIMIT as u64)
}

/// The first part of `op`'s reply that its client's posted receive takes,
/// the same on both sides: [`REPLY_SLOT`], or for a `RetrieveBatch` whose
/// bytes come inside its reply, room for them too (one message).
pub fn reply_slot(op: &Op) -> usize {
    match op {
        Op::RetrieveBatch { ranges, .. } => retrieve_reply_slot(ranges),
        _ => REPLY_SLOT,
    }
}

/// [`reply_slot`] of a `RetrieveBatch` of `ranges`.
pub fn retrieve_reply_slot(ranges: &[(u64, u64)]) -> usize {
    if retrieve_inline(ranges) {
        REPLY_SLOT + ranges.iter().map(|&(_, size)| size as usize).sum::<usize>()
    } else {
        REPLY_SLOT
    }
}

/// The tag of every request to a server.
pub const REQUEST_TAG: i32 = 1;
/// The reply tag of a request that gets no reply (`SubmitInline`): below
/// [`FIRST_REPLY_TAG`], so that nothing is ever sent on it (a malformed
/// one is not answered).
pub const NO_REPLY_TAG: i32 = 2;
/// The first reply tag; tags below are reserved. The reply tags are the
/// lower half of the tags MPI takes, the copies between servers the upper
/// half (`World::reply_tags`, `World::exchange_tag`).
pub const FIRST_REPLY_TAG: i32 = 16;
/// The largest fragment of bulk data, in bytes.
pub const FRAGMENT: usize = 1 << 30;
/// The bytes every request and reply begins with: its whole length
/// (`u64`), so that a receiver whose posted receive took only its first
/// slot knows what follows.
pub const LENGTH_HEADER: usize = 8;
/// The first part of a request a server's posted receive takes: room for
/// an [`Op::SubmitInline`] of [`INLINE_SUBMIT_LIMIT`] bytes of data and
/// the fields of a few copies, so that one-way copies always travel as one
/// message (the client gathers them up to [`INLINE_BATCH_LIMIT`]).
pub const REQUEST_SLOT: usize = INLINE_SUBMIT_LIMIT + 1024;
/// The first part of a reply a client's posted receive takes (1 KiB,
/// within malloc's per-thread cache): the status and a short payload; a
/// longer reply (many entry addresses, a long error) sends the rest.
pub const REPLY_SLOT: usize = 1024;
/// The fragments a message's rest travels in (smaller than bulk data's
/// [`FRAGMENT`]: a server that cannot hold a rest still takes it, into one
/// fragment, to drop it).
pub const REST_FRAGMENT: usize = 16 << 20;
/// The longest request or reply (64 GiB): a length header past it is
/// malformed, and its rest is not waited for.
pub const MAX_MESSAGE: u64 = 64 << 30;
/// The largest copy to a device that travels one-way, inside an
/// [`Op::SubmitInline`], with no reply to wait for; larger ones go
/// straight from the program's memory, after their request.
pub const INLINE_SUBMIT_LIMIT: usize = 64 << 10;
/// The encoded size of an [`Op::SubmitInline`] with no copy (length
/// header, reply tag, code, count).
pub const INLINE_BATCH_BASE: usize = 8 + 4 + 4 + 8;
/// What each copy adds to it besides its data (device, address, data's
/// length).
pub const INLINE_COPY_FIELDS: usize = 4 + 8 + 8;
/// The largest encoded [`Op::SubmitInline`] a client sends: its request
/// slot.
pub const INLINE_BATCH_LIMIT: usize = REQUEST_SLOT;
// One copy of the largest size fits a batch on its own.
const _: () =
    assert!(INLINE_BATCH_BASE + INLINE_COPY_FIELDS + INLINE_SUBMIT_LIMIT <= INLINE_BATCH_LIMIT);

/// One copy of an [`Op::SubmitInline`]: `data` to `ptr` on the server's
/// `device`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineCopy {
    /// The server's device.
    pub device: u32,
    /// The device address.
    pub ptr: u64,
    /// The bytes.
    pub data: Vec<u8>,
}

/// What a server is asked to do. `device` is the server's own device
/// number.
/// The fields are the arguments of the `__tgt_rtl_*` entry of the same
/// name (`ptr` a device address, `size` in bytes).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Who are you: device count, host name, plugin.
    Hello,
    /// `init_device`.
    InitDevice { device: u32 },
    /// `deinit_device`.
    DeinitDevice { device: u32 },
    /// Load an image; reply: one device address per entry, or
    /// [`NOT_SHIPPED`] when `image` is `None` and the server no longer
    /// holds the bytes shipped under `image_id`.
    LoadBinary {
        device: u32,
        /// The program's `__tgt_device_image` address: the image's key.
        key: u64,
        /// `__tgt_rtl_load_binary_flags`'s flags.
        flags: u32,
        /// The client's number for these bytes: the first load on a
        /// server ships them, the loads on its other devices name them.
        image_id: u64,
        /// The bytes, or `None`: those shipped before under `image_id`.
        image: Option<Vec<u8>>,
        entries: Vec<EntrySpec>,
    },
    /// Unload the image loaded under `key`.
    UnloadBinary { device: u32, key: u64 },
    /// Allocate; reply: the device address.
    Alloc { device: u32, size: u64, kind: i32 },
    /// Free.
    Delete { device: u32, ptr: u64 },
    /// Host -> device: `size` bytes follow on the reply tag.
    Submit { device: u32, ptr: u64, size: u64 },
    /// Device -> host: `size` bytes follow the reply on the reply tag.
    Retrieve { device: u32, ptr: u64, size: u64 },
    /// Send `size` bytes at `ptr` to server rank `peer` with tag `tag`.
    ExchangeOut {
        device: u32,
        ptr: u64,
        size: u64,
        peer: i32,
        tag: i32,
    },
    /// Receive `size` bytes into `ptr` from server rank `peer`, tag `tag`.
    ExchangeIn {
        device: u32,
        ptr: u64,
        size: u64,
        peer: i32,
        tag: i32,
    },
    /// Copy between two devices of this server.
    ExchangeLocal {
        src: u32,
        src_ptr: u64,
        dst: u32,
        dst_ptr: u64,
        size: u64,
    },
    /// Run a kernel with pointer-sized arguments (`types` when typed).
    Run {
        device: u32,
        entry: u64,
        args: Vec<u64>,
        types: Option<Vec<u8>>,
        teams: Option<(i32, i32, u64)>,
    },
    /// Wait for the device's work.
    Synchronize { device: u32 },
    /// Host -> device copies with their bytes in the request, and no
    /// reply: each copy's call returned when its bytes were taken (a
    /// blocking copy of a few bytes costs no round trip), and the client
    /// sends the copies it gathered for a server before its next request
    /// there. A failure is kept and answers the client's next request that
    /// has a reply.
    SubmitInline { copies: Vec<InlineCopy> },
    /// Device -> host of several ranges (a queue's copies back): the
    /// reply, then each range's bytes on the reply tag, in order; or, for
    /// ranges of at most [`INLINE_RETRIEVE_LIMIT`] bytes in all, the
    /// bytes inside the reply, after its status ([`reply_slot`]).
    RetrieveBatch {
        device: u32,
        /// (device address, bytes) of each range.
        ranges: Vec<(u64, u64)>,
    },
    /// This client is done: tear down when every client said so.
    Exit,
}

/// One host entry of an image, as the server needs it to load the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrySpec {
    /// Its symbol name.
    pub name: String,
    /// Bytes of a global; 0 for a function.
    pub size: u64,
    /// `declare target` flags.
    pub flags: i32,
}

/// A request: what to do and where to reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The tag the reply (and a transfer's data) uses.
    pub reply_tag: i32,
    /// The operation.
    pub op: Op,
}

/// A reply's status word.
pub const OK: u32 = 0;
/// A reply's status word for a failure; the error text follows.
pub const FAILED: u32 = 1;
/// A `LoadBinary` reply's status word: the bytes it named are not here.
pub const NOT_SHIPPED: u32 = 2;
/// A `Run` reply's status word: the kernel called `exit(status)`; the
/// status (`i32`) follows. The server is going away.
pub const KERNEL_EXIT: u32 = 3;
/// A reply's status word for a request a server refuses because it is
/// going away after a kernel called `exit(status)` for program rank
/// `client`: the error text follows, then the status and that rank
/// (`i32` each). That rank's process is exiting with that status.
pub const EXITING: u32 = 4;

/// A message that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed message: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

/// The whole length a message's first part says (its [`LENGTH_HEADER`]).
pub fn message_len(first: &[u8]) -> Result<u64, Malformed> {
    match first.get(..LENGTH_HEADER) {
        Some(header) => {
            let said = u64::from_le_bytes(header.try_into().expect("8 bytes"));
            if said < LENGTH_HEADER as u64 {
                return Err(Malformed(format!("its header says {said} bytes")));
            }
            Ok(said)
        }
        None => Err(Malformed(format!(
            "{} bytes, shorter than a length header",
            first.len()
        ))),
    }
}

/// Builds a message: its [`LENGTH_HEADER`], then the fields.
#[derive(Debug)]
pub struct Writer(Vec<u8>);

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// An empty message (its length header still to be written).
    pub fn new() -> Self {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&[0; LENGTH_HEADER]);
        Writer(bytes)
    }
    /// Append a `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an `i32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a length-prefixed blob.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
    /// Append a length-prefixed string.
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    /// Append `n` zero bytes, with no length before them, for the caller
    /// to fill (a copy back's bytes, whose length the reader knows).
    pub fn raw_mut(&mut self, n: usize) -> &mut [u8] {
        let start = self.0.len();
        self.0.resize(start + n, 0);
        &mut self.0[start..]
    }
    /// The message, its length header written.
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.0.len() as u64;
        self.0[..LENGTH_HEADER].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

/// Reads a message.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Read the fields of `message`, after its length header, which must
    /// say its length.
    pub fn message(message: &'a [u8]) -> Result<Self, Malformed> {
        let said = message_len(message)?;
        if said != message.len() as u64 {
            return Err(Malformed(format!(
                "its header says {said} bytes, {} came",
                message.len()
            )));
        }
        Ok(Reader {
            rest: &message[LENGTH_HEADER..],
        })
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        if self.rest.len() < n {
            return Err(Malformed(format!(
                "{what}: {n} bytes wanted, {} left",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    /// A `u32`.
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(
            self.take(4, "u32")?.try_into().expect("4 bytes"),
        ))
    }
    /// An `i32`.
    pub fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_le_bytes(
            self.take(4, "i32")?.try_into().expect("4 bytes"),
        ))
    }
    /// A `u64`.
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(
            self.take(8, "u64")?.try_into().expect("8 bytes"),
        ))
    }
    /// `n` bytes with no length before them.
    pub fn raw(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        self.take(n, "bytes")
    }
    /// A length-prefixed blob.
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let len = self.u64()?;
        let len = usize::try_from(len).map_err(|_| Malformed(format!("length {len}")))?;
        self.take(len, "blob")
    }
    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, Malformed> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Malformed("a string is not UTF-8".into()))
    }
    /// A count of items each at least `min_size` bytes long, checked
    /// against what is left (so a forged count cannot make us allocate).
    pub fn count(&mut self, min_size: usize) -> Result<usize, Malformed> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| Malformed(format!("count {n}")))?;
        if n.saturating_mul(min_size.max(1)) > self.rest.len() {
            return Err(Malformed(format!("count {n} exceeds the message")));
        }
        Ok(n)
    }
    /// Everything was read.
    pub fn end(&self) -> Result<(), Malformed> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Malformed(format!("{} trailing bytes", self.rest.len())))
        }
    }
}

mod code {
    pub const HELLO: u32 = 1;
    pub const INIT_DEVICE: u32 = 2;
    pub const DEINIT_DEVICE: u32 = 3;
    pub const LOAD_BINARY: u32 = 4;
    pub const UNLOAD_BINARY: u32 = 5;
    pub const ALLOC: u32 = 6;
    pub const DELETE: u32 = 7;
    pub const SUBMIT: u32 = 8;
    pub const RETRIEVE: u32 = 9;
    pub const EXCHANGE_OUT: u32 = 10;
    pub const EXCHANGE_IN: u32 = 11;
    pub const EXCHANGE_LOCAL: u32 = 12;
    pub const RUN: u32 = 13;
    pub const SYNCHRONIZE: u32 = 14;
    pub const EXIT: u32 = 15;
    pub const SUBMIT_INLINE: u32 = 16;
    pub const RETRIEVE_BATCH: u32 = 17;
}

impl Request {
    /// The request as a message.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.i32(self.reply_tag);
        match &self.op {
            Op::Hello => {
                w.u32(code::HELLO);
            }
            Op::InitDevice { device } => {
                w.u32(code::INIT_DEVICE).u32(*device);
            }
            Op::DeinitDevice { device } => {
                w.u32(code::DEINIT_DEVICE).u32(*device);
            }
            Op::LoadBinary {
                device,
                key,
                flags,
                image_id,
                image,
                entries,
            } => {
                w.u32(code::LOAD_BINARY)
                    .u32(*device)
                    .u64(*key)
                    .u32(*flags)
                    .u64(*image_id);
                match image {
                    Some(bytes) => w.u32(1).bytes(bytes),
                    None => w.u32(0),
                };
                w.u64(entries.len() as u64);
                for e in entries {
                    w.str(&e.name).u64(e.size).i32(e.flags);
                }
            }
            Op::UnloadBinary { device, key } => {
                w.u32(code::UNLOAD_BINARY).u32(*device).u64(*key);
            }
            Op::Alloc { device, size, kind } => {
                w.u32(code::ALLOC).u32(*device).u64(*size).i32(*kind);
            }
            Op::Delete { device, ptr } => {
                w.u32(code::DELETE).u32(*device).u64(*ptr);
            }
            Op::Submit { device, ptr, size } => {
                w.u32(code::SUBMIT).u32(*device).u64(*ptr).u64(*size);
            }
            Op::Retrieve { device, ptr, size } => {
                w.u32(code::RETRIEVE).u32(*device).u64(*ptr).u64(*size);
            }
            Op::ExchangeOut {
                device,
                ptr,
                size,
                peer,
                tag,
            } => {
                w.u32(code::EXCHANGE_OUT)
                    .u32(*device)
                    .u64(*ptr)
                    .u64(*size)
                    .i32(*peer)
                    .i32(*tag);
            }
            Op::ExchangeIn {
                device,
                ptr,
                size,
                peer,
                tag,
            } => {
                w.u32(code::EXCHANGE_IN)
                    .u32(*device)
                    .u64(*ptr)
                    .u64(*size)
                    .i32(*peer)
                    .i32(*tag);
            }
            Op::ExchangeLocal {
                src,
                src_ptr,
                dst,
                dst_ptr,
                size,
            } => {
                w.u32(code::EXCHANGE_LOCAL)
                    .u32(*src)
                    .u64(*src_ptr)
                    .u32(*dst)
                    .u64(*dst_ptr)
                    .u64(*size);
            }
            Op::Run {
                device,
                entry,
                args,
                types,
                teams,
            } => {
                w.u32(code::RUN).u32(*device).u64(*entry);
                w.u64(args.len() as u64);
                for a in args {
                    w.u64(*a);
                }
                match types {
                    Some(t) => w.u32(1).bytes(t),
                    None => w.u32(0),
                };
                match teams {
                    Some((t, l, n)) => w.u32(1).i32(*t).i32(*l).u64(*n),
                    None => w.u32(0),
                };
            }
            Op::Synchronize { device } => {
                w.u32(code::SYNCHRONIZE).u32(*device);
            }
            Op::Exit => {
                w.u32(code::EXIT);
            }
            Op::SubmitInline { copies } => {
                w.u32(code::SUBMIT_INLINE).u64(copies.len() as u64);
                for copy in copies {
                    w.u32(copy.device).u64(copy.ptr).bytes(&copy.data);
                }
            }
            Op::RetrieveBatch { device, ranges } => {
                w.u32(code::RETRIEVE_BATCH)
                    .u32(*device)
                    .u64(ranges.len() as u64);
                for (ptr, size) in ranges {
                    w.u64(*ptr).u64(*size);
                }
            }
        }
        w.finish()
    }

    /// Decode a request message.
    pub fn decode(message: &[u8]) -> Result<Request, Malformed> {
        let mut r = Reader::message(message)?;
        let reply_tag = r.i32()?;
        let op = match r.u32()? {
            code::HELLO => Op::Hello,
            code::INIT_DEVICE => Op::InitDevice { device: r.u32()? },
            code::DEINIT_DEVICE => Op::DeinitDevice { device: r.u32()? },
            code::LOAD_BINARY => {
                let device = r.u32()?;
                let key = r.u64()?;
                let flags = r.u32()?;
                let image_id = r.u64()?;
                let image = match r.u32()? {
                    0 => None,
                    _ => Some(r.bytes()?.to_vec()),
                };
                let n = r.count(8 + 8 + 4)?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push(EntrySpec {
                        name: r.string()?,
                        size: r.u64()?,
                        flags: r.i32()?,
                    });
                }
                Op::LoadBinary {
                    device,
                    key,
                    flags,
                    image_id,
                    image,
                    entries,
                }
            }
            code::UNLOAD_BINARY => Op::UnloadBinary {
                device: r.u32()?,
                key: r.u64()?,
            },
            code::ALLOC => Op::Alloc {
                device: r.u32()?,
                size: r.u64()?,
                kind: r.i32()?,
            },
            code::DELETE => Op::Delete {
                device: r.u32()?,
                ptr: r.u64()?,
            },
            code::SUBMIT => Op::Submit {
                device: r.u32()?,
                ptr: r.u64()?,
                size: r.u64()?,
            },
            code::RETRIEVE => Op::Retrieve {
                device: r.u32()?,
                ptr: r.u64()?,
                size: r.u64()?,
            },
            code::EXCHANGE_OUT => Op::ExchangeOut {
                device: r.u32()?,
                ptr: r.u64()?,
                size: r.u64()?,
                peer: r.i32()?,
                tag: r.i32()?,
            },
            code::EXCHANGE_IN => Op::ExchangeIn {
                device: r.u32()?,
                ptr: r.u64()?,
                size: r.u64()?,
                peer: r.i32()?,
                tag: r.i32()?,
            },
            code::EXCHANGE_LOCAL => Op::ExchangeLocal {
                src: r.u32()?,
                src_ptr: r.u64()?,
                dst: r.u32()?,
                dst_ptr: r.u64()?,
                size: r.u64()?,
            },
            code::RUN => {
                let device = r.u32()?;
                let entry = r.u64()?;
                let n = r.count(8)?;
                let mut args = Vec::with_capacity(n);
                for _ in 0..n {
                    args.push(r.u64()?);
                }
                let types = match r.u32()? {
                    0 => None,
                    _ => Some(r.bytes()?.to_vec()),
                };
                let teams = match r.u32()? {
                    0 => None,
                    _ => Some((r.i32()?, r.i32()?, r.u64()?)),
                };
                Op::Run {
                    device,
                    entry,
                    args,
                    types,
                    teams,
                }
            }
            code::SYNCHRONIZE => Op::Synchronize { device: r.u32()? },
            code::EXIT => Op::Exit,
            code::SUBMIT_INLINE => {
                let n = r.count(INLINE_COPY_FIELDS)?;
                let mut copies = Vec::with_capacity(n);
                for _ in 0..n {
                    copies.push(InlineCopy {
                        device: r.u32()?,
                        ptr: r.u64()?,
                        data: r.bytes()?.to_vec(),
                    });
                }
                Op::SubmitInline { copies }
            }
            code::RETRIEVE_BATCH => {
                let device = r.u32()?;
                let n = r.count(16)?;
                let mut ranges = Vec::with_capacity(n);
                for _ in 0..n {
                    ranges.push((r.u64()?, r.u64()?));
                }
                Op::RetrieveBatch { device, ranges }
            }
            other => return Err(Malformed(format!("unknown operation {other}"))),
        };
        r.end()?;
        Ok(Request { reply_tag, op })
    }
}

/// A successful reply with `payload` (written by the closure).
pub fn ok_reply(payload: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(OK);
    payload(&mut w);
    w.finish()
}

/// A failed reply.
pub fn error_reply(message: &str) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(FAILED).str(message);
    w.finish()
}

/// The reply to a `LoadBinary` that named bytes the server does not hold
/// (any more): the client ships them again.
pub fn not_shipped_reply() -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(NOT_SHIPPED);
    w.finish()
}

/// The reply tag a request message (or its first part) starts with, if
/// it names a valid one: where the rest of a long request comes, and
/// where a request that cannot be decoded is answered.
pub fn reply_tag_of(message: &[u8]) -> Option<i32> {
    let tag = message.get(LENGTH_HEADER..LENGTH_HEADER + 4)?;
    Some(i32::from_le_bytes(tag.try_into().ok()?)).filter(|tag| *tag >= FIRST_REPLY_TAG)
}

/// The reply to a `Run` whose kernel called `exit(status)`.
pub fn kernel_exit_reply(status: i32) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(KERNEL_EXIT).i32(status);
    w.finish()
}

/// The status of a [`kernel_exit_reply`], if `message` is one.
pub fn kernel_exit_status(message: &[u8]) -> Option<i32> {
    let mut r = Reader::message(message).ok()?;
    match r.u32() {
        Ok(KERNEL_EXIT) => r.i32().ok(),
        _ => None,
    }
}

/// A server's refusal of a request after a kernel called `exit(status)`
/// for program rank `client` ([`EXITING`]): a failure whose text is
/// `message`, as [`read_reply`] reads it.
pub fn exiting_reply(message: &str, status: i32, client: i32) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(EXITING).str(message).i32(status).i32(client);
    w.finish()
}

/// The status and the program rank of an [`exiting_reply`], if `message`
/// is one.
pub fn exiting_of(message: &[u8]) -> Option<(i32, i32)> {
    let mut r = Reader::message(message).ok()?;
    if r.u32().ok()? != EXITING {
        return None;
    }
    r.string().ok()?;
    let status = r.i32().ok()?;
    let client = r.i32().ok()?;
    r.end().ok()?;
    Some((status, client))
}

/// Whether `message` is [`not_shipped_reply`].
pub fn is_not_shipped(message: &[u8]) -> bool {
    Reader::message(message)
        .and_then(|mut r| r.u32())
        .is_ok_and(|status| status == NOT_SHIPPED)
}

/// Split a reply: `Ok(reader over the payload)` or the server's error.
pub fn read_reply(message: &[u8]) -> Result<Reader<'_>, String> {
    let mut r = Reader::message(message).map_err(|e| e.to_string())?;
    match r.u32().map_err(|e| e.to_string())? {
        OK => Ok(r),
        _ => Err(r.string().unwrap_or_else(|e| e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exiting_reply_is_a_failure_that_names_the_exit() {
        let reply = exiting_reply("going away", 7, 3);
        assert_eq!(exiting_of(&reply), Some((7, 3)));
        assert_eq!(read_reply(&reply).err().as_deref(), Some("going away"));
        assert_eq!(kernel_exit_status(&reply), None);
        assert_eq!(exiting_of(&error_reply("going away")), None);
        assert_eq!(exiting_of(&kernel_exit_reply(7)), None);
    }

    fn round_trip(op: Op) {
        let request = Request { reply_tag: 77, op };
        assert_eq!(Request::decode(&request.encode()).unwrap(), request);
    }

    #[test]
    fn every_operation_decodes_to_itself() {
        round_trip(Op::Hello);
        round_trip(Op::InitDevice { device: 3 });
        round_trip(Op::DeinitDevice { device: 3 });
        round_trip(Op::LoadBinary {
            device: 1,
            key: 0xdead,
            flags: 1,
            image_id: 7,
            image: Some(vec![1, 2, 3]),
            entries: vec![
                EntrySpec {
                    name: "k".into(),
                    size: 0,
                    flags: 0,
                },
                EntrySpec {
                    name: "g".into(),
                    size: 8,
                    flags: 1,
                },
            ],
        });
        round_trip(Op::LoadBinary {
            device: 2,
            key: 0xdead,
            flags: 0,
            image_id: 7,
            image: None,
            entries: Vec::new(),
        });
        round_trip(Op::UnloadBinary { device: 1, key: 9 });
        round_trip(Op::SubmitInline {
            copies: vec![
                InlineCopy {
                    device: 3,
                    ptr: 0x1000,
                    data: vec![9; 17],
                },
                InlineCopy {
                    device: 0,
                    ptr: 0x2000,
                    data: Vec::new(),
                },
            ],
        });
        round_trip(Op::SubmitInline { copies: Vec::new() });
        round_trip(Op::RetrieveBatch {
            device: 1,
            ranges: vec![(0x1000, 8), (0x2000, 0), (0x3000, 1 << 20)],
        });
        round_trip(Op::Alloc {
            device: 0,
            size: 64,
            kind: 2,
        });
        round_trip(Op::Delete {
            device: 0,
            ptr: 0x1000,
        });
        round_trip(Op::Submit {
            device: 0,
            ptr: 1,
            size: 2,
        });
        round_trip(Op::Retrieve {
            device: 0,
            ptr: 1,
            size: 2,
        });
        round_trip(Op::ExchangeOut {
            device: 0,
            ptr: 1,
            size: 2,
            peer: 3,
            tag: 4,
        });
        round_trip(Op::ExchangeIn {
            device: 0,
            ptr: 1,
            size: 2,
            peer: 3,
            tag: 4,
        });
        round_trip(Op::ExchangeLocal {
            src: 0,
            src_ptr: 1,
            dst: 1,
            dst_ptr: 2,
            size: 3,
        });
        round_trip(Op::Run {
            device: 2,
            entry: 0x40,
            args: vec![1, 2, u64::MAX],
            types: Some(vec![0, 1, 2]),
            teams: Some((4, 0, 1000)),
        });
        round_trip(Op::Run {
            device: 2,
            entry: 0x40,
            args: vec![],
            types: None,
            teams: None,
        });
        round_trip(Op::Synchronize { device: 0 });
        round_trip(Op::Exit);
    }

    #[test]
    fn malformed_messages_are_errors_not_panics() {
        assert!(Request::decode(&[]).is_err());
        assert!(Request::decode(&[0, 0, 0, 0, 99, 0, 0, 0]).is_err());
        // A forged entry count larger than the message.
        let mut w = Writer::new();
        w.i32(1)
            .u32(code::LOAD_BINARY)
            .u32(0)
            .u64(0)
            .u32(0)
            .bytes(&[])
            .u64(u64::MAX);
        assert!(Request::decode(&w.finish()).is_err());
        // Trailing bytes.
        let mut bytes = Request {
            reply_tag: 1,
            op: Op::Exit,
        }
        .encode();
        bytes.push(0);
        assert!(Request::decode(&bytes).is_err());
    }

    #[test]
    fn the_largest_one_way_copy_fits_its_slot() {
        let message = Request {
            reply_tag: FIRST_REPLY_TAG,
            op: Op::SubmitInline {
                copies: vec![InlineCopy {
                    device: 0,
                    ptr: 0,
                    data: vec![7; INLINE_SUBMIT_LIMIT],
                }],
            },
        }
        .encode();
        assert_eq!(
            message.len(),
            INLINE_BATCH_BASE + INLINE_COPY_FIELDS + INLINE_SUBMIT_LIMIT
        );
        assert!(message.len() <= REQUEST_SLOT);
        assert_eq!(message_len(&message), Ok(message.len() as u64));
    }

    #[test]
    fn a_length_header_that_disagrees_is_malformed() {
        let mut message = ok_reply(|w| {
            w.u64(42);
        });
        assert!(read_reply(&message).is_ok());
        message.push(0);
        assert!(read_reply(&message).is_err());
        message.truncate(5);
        assert!(read_reply(&message).is_err());
        assert!(Request::decode(&0u64.to_le_bytes()).is_err());
    }

    #[test]
    fn copies_back_come_inside_the_reply_up_to_the_limit() {
        let limit = INLINE_RETRIEVE_LIMIT as u64;
        assert!(retrieve_inline(&[]));
        assert!(retrieve_inline(&[(0x1000, limit)]));
        assert!(retrieve_inline(&[(0x1000, limit - 8), (0x2000, 8)]));
        assert!(!retrieve_inline(&[(0x1000, limit + 1)]));
        assert!(!retrieve_inline(&[(0x1000, limit), (0x2000, 1)]));
        // A forged total that would wrap is not small.
        assert!(!retrieve_inline(&[(0, u64::MAX), (0, 2)]));
        let batch = |ranges: Vec<(u64, u64)>| Op::RetrieveBatch { device: 0, ranges };
        assert_eq!(
            reply_slot(&batch(vec![(0, 100), (0, 28)])),
            REPLY_SLOT + 128
        );
        assert_eq!(reply_slot(&batch(vec![(0, limit + 1)])), REPLY_SLOT);
        assert_eq!(reply_slot(&Op::Exit), REPLY_SLOT);
        assert!(reply_tag_of(
            &Request {
                reply_tag: NO_REPLY_TAG,
                op: Op::SubmitInline { copies: Vec::new() }
            }
            .encode()
        )
        .is_none());
    }

    #[test]
    fn replies_carry_payload_or_error() {
        let ok = ok_reply(|w| {
            w.u64(42);
        });
        assert_eq!(read_reply(&ok).unwrap().u64().unwrap(), 42);
        let failed = error_reply("no such device");
        assert_eq!(read_reply(&failed).unwrap_err(), "no such device");
    }
}
