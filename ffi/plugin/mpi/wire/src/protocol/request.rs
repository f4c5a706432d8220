//! What a server is asked to do: [`Request`], its [`Op`], and their
//! encoding.
use super::codec::{Malformed, Reader, Writer};
use super::{FIRST_REPLY_TAG, INLINE_COPY_FIELDS, LENGTH_HEADER};

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
    /// [`NOT_SHIPPED`](super::NOT_SHIPPED) when `image` is `None` and the server no longer
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
    /// Which of the server's devices can run `image` (its plugin's
    /// `is_valid_binary`, then `is_device_compatible` per device); reply:
    /// [`Runners`](super::Runners). Asked once per server and image, at
    /// registration, before any device is initialised. The server keeps
    /// nothing of it: a load ships the bytes as before.
    CanRun { image: Vec<u8> },
    /// Unload the image loaded under `key`.
    UnloadBinary { device: u32, key: u64 },
    /// Allocate; reply: the device address.
    Alloc { device: u32, size: u64, kind: i32 },
    /// Free.
    Delete { device: u32, ptr: u64 },
    /// Host -> device: `size` bytes follow on the reply tag.
    Submit { device: u32, ptr: u64, size: u64 },
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
    /// ranges of at most [`INLINE_RETRIEVE_LIMIT`](super::INLINE_RETRIEVE_LIMIT) bytes in all, the
    /// bytes inside the reply, after its status ([`reply_slot`](super::reply_slot)).
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

mod code {
    pub const HELLO: u32 = 1;
    pub const INIT_DEVICE: u32 = 2;
    pub const DEINIT_DEVICE: u32 = 3;
    pub const LOAD_BINARY: u32 = 4;
    pub const UNLOAD_BINARY: u32 = 5;
    pub const ALLOC: u32 = 6;
    pub const DELETE: u32 = 7;
    pub const SUBMIT: u32 = 8;
    // 9 was a single-range retrieve, replaced by `RETRIEVE_BATCH`: not
    // reused, so that such a request is refused as unknown, never misread.
    pub const EXCHANGE_OUT: u32 = 10;
    pub const EXCHANGE_IN: u32 = 11;
    pub const EXCHANGE_LOCAL: u32 = 12;
    pub const RUN: u32 = 13;
    pub const SYNCHRONIZE: u32 = 14;
    pub const EXIT: u32 = 15;
    pub const SUBMIT_INLINE: u32 = 16;
    pub const RETRIEVE_BATCH: u32 = 17;
    pub const CAN_RUN: u32 = 18;
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
            Op::CanRun { image } => {
                w.u32(code::CAN_RUN).bytes(image);
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
            code::CAN_RUN => Op::CanRun {
                image: r.bytes()?.to_vec(),
            },
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

/// The reply tag a request message (or its first part) starts with, if
/// it names a valid one: where the rest of a long request comes, and
/// where a request that cannot be decoded is answered.
pub fn reply_tag_of(message: &[u8]) -> Option<i32> {
    let tag = message.get(LENGTH_HEADER..LENGTH_HEADER + 4)?;
    Some(i32::from_le_bytes(tag.try_into().ok()?)).filter(|tag| *tag >= FIRST_REPLY_TAG)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::*;

    /// Encode then decode gives the request back; every shorter prefix,
    /// as it came or with its header saying its length, is an error, not a
    /// panic.
    fn round_trip(op: Op) {
        let request = Request { reply_tag: 77, op };
        let message = request.encode();
        assert_eq!(Request::decode(&message).unwrap(), request);
        for len in 0..message.len() {
            let mut short = message[..len].to_vec();
            assert!(Request::decode(&short).is_err(), "{len}");
            if len >= LENGTH_HEADER {
                short[..LENGTH_HEADER].copy_from_slice(&(len as u64).to_le_bytes());
                assert!(Request::decode(&short).is_err(), "{len}, header fixed");
            }
        }
    }

    #[test]
    fn every_operation_decodes_to_itself() {
        round_trip(Op::Hello);
        round_trip(Op::InitDevice { device: 3 });
        round_trip(Op::DeinitDevice { device: 3 });
        round_trip(Op::CanRun {
            image: b"\x7fELF image".to_vec(),
        });
        round_trip(Op::CanRun { image: Vec::new() });
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
        // The retired single-range retrieve (code 9): unknown, not misread.
        let mut w = Writer::new();
        w.i32(1).u32(9).u32(0).u64(0x1000).u64(8);
        let refused = Request::decode(&w.finish()).unwrap_err();
        assert!(
            format!("{refused:?}").contains("unknown operation 9"),
            "{refused:?}"
        );
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
}
