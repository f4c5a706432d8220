//! What a server answers: a [`Reply`], its status word, then its payload
//! (a [`Payload`], one type per request that answers more than "done"),
//! or the server's error text.
//!
//! Both sides use the same types, so that a reply is written and read by
//! one `encode`/`decode` pair, each tested to give back what it was given.
//! A retrieve's bytes inside its reply (a `RetrieveBatch` of at most
//! [`super::INLINE_RETRIEVE_LIMIT`] bytes) are the one payload still
//! written and read in place ([`ok_reply`], [`read_reply`]): they go from
//! device memory into the message, and from the message into the
//! program's buffers, with no copy in between.
use super::codec::{Malformed, Reader, Writer};

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

/// The payload of a successful reply: written after the status word,
/// read back the same.
pub trait Payload: Sized {
    /// Append the payload's fields.
    fn write(&self, w: &mut Writer);
    /// Read the payload's fields (the reader checks nothing is left).
    fn read(r: &mut Reader<'_>) -> Result<Self, Malformed>;
}

/// No payload: the request was done.
impl Payload for () {
    fn write(&self, _: &mut Writer) {}
    fn read(_: &mut Reader<'_>) -> Result<(), Malformed> {
        Ok(())
    }
}

/// `Hello`'s payload: who the server is and what its devices run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// How many devices it serves.
    pub devices: u32,
    /// Its host name.
    pub host: String,
    /// The plugin it serves them with (its name, for people).
    pub plugin: String,
    /// The ELF machine of the images its devices run (`e_machine`), as
    /// the server derives it from the kind its plugin reports for its
    /// devices: what the program's plugin checks images against.
    pub machine: u32,
}

impl Payload for Hello {
    fn write(&self, w: &mut Writer) {
        w.u32(self.devices)
            .str(&self.host)
            .str(&self.plugin)
            .u32(self.machine);
    }
    fn read(r: &mut Reader<'_>) -> Result<Hello, Malformed> {
        Ok(Hello {
            devices: r.u32()?,
            host: r.string()?,
            plugin: r.string()?,
            machine: r.u32()?,
        })
    }
}

/// `LoadBinary`'s payload: the device address of each entry, in the
/// order of the request's entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// One address per entry.
    pub entries: Vec<u64>,
}

impl Payload for Loaded {
    fn write(&self, w: &mut Writer) {
        for &addr in &self.entries {
            w.u64(addr);
        }
    }
    fn read(r: &mut Reader<'_>) -> Result<Loaded, Malformed> {
        if !r.left().is_multiple_of(8) {
            return Err(Malformed(format!("{} bytes of entry addresses", r.left())));
        }
        let entries = (0..r.left() / 8)
            .map(|_| r.u64())
            .collect::<Result<_, _>>()?;
        Ok(Loaded { entries })
    }
}

/// `CanRun`'s payload: the server's devices that can run the image, in
/// increasing order (none: no device there runs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runners {
    /// The server's own device numbers.
    pub devices: Vec<u32>,
}

impl Payload for Runners {
    fn write(&self, w: &mut Writer) {
        for &device in &self.devices {
            w.u32(device);
        }
    }
    fn read(r: &mut Reader<'_>) -> Result<Runners, Malformed> {
        if !r.left().is_multiple_of(4) {
            return Err(Malformed(format!("{} bytes of device numbers", r.left())));
        }
        let devices = (0..r.left() / 4)
            .map(|_| r.u32())
            .collect::<Result<_, _>>()?;
        Ok(Runners { devices })
    }
}

/// `Alloc`'s payload: the device address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocated {
    /// The address (0: none).
    pub addr: u64,
}

impl Payload for Allocated {
    fn write(&self, w: &mut Writer) {
        w.u64(self.addr);
    }
    fn read(r: &mut Reader<'_>) -> Result<Allocated, Malformed> {
        Ok(Allocated { addr: r.u64()? })
    }
}

/// `Exit`'s payload: the server's one-line summary (its teardown's, or
/// how many program ranks it still waits for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// The summary.
    pub summary: String,
}

impl Payload for Exited {
    fn write(&self, w: &mut Writer) {
        w.str(&self.summary);
    }
    fn read(r: &mut Reader<'_>) -> Result<Exited, Malformed> {
        Ok(Exited {
            summary: r.string()?,
        })
    }
}

/// A reply: its status, and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<P> {
    /// Done: the payload.
    Ok(P),
    /// Failed: the server's error text.
    Failed(String),
    /// A `LoadBinary` that named bytes the server does not hold (any
    /// more): the client ships them again.
    NotShipped,
    /// A `Run` whose kernel called `exit(status)`.
    KernelExit {
        /// The kernel's exit status.
        status: i32,
    },
    /// Refused: the server is going away after a kernel called
    /// `exit(status)` for program rank `client`.
    Exiting {
        /// The error text.
        message: String,
        /// The kernel's exit status.
        status: i32,
        /// The program rank whose kernel it was.
        client: i32,
    },
}

/// Why a reply brought no payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The server failed (or refused): its text.
    #[error("{0}")]
    Refused(String),
    /// The bytes a `LoadBinary` named are not on the server.
    #[error("the image's bytes are not on the server any more")]
    NotShipped,
    /// The kernel called `exit(status)`.
    #[error("the kernel called exit({0})")]
    KernelExit(i32),
    /// The reply does not decode.
    #[error(transparent)]
    Malformed(#[from] Malformed),
}

impl<P: Payload> Reply<P> {
    /// The reply as a message.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            Reply::Ok(payload) => {
                w.u32(OK);
                payload.write(&mut w);
            }
            Reply::Failed(message) => {
                w.u32(FAILED).str(message);
            }
            Reply::NotShipped => {
                w.u32(NOT_SHIPPED);
            }
            Reply::KernelExit { status } => {
                w.u32(KERNEL_EXIT).i32(*status);
            }
            Reply::Exiting {
                message,
                status,
                client,
            } => {
                w.u32(EXITING).str(message).i32(*status).i32(*client);
            }
        }
        w.finish()
    }

    /// Decode a reply message: all of it, or an error.
    pub fn decode(message: &[u8]) -> Result<Reply<P>, Malformed> {
        let mut r = Reader::message(message)?;
        let reply = match r.u32()? {
            OK => Reply::Ok(P::read(&mut r)?),
            FAILED => Reply::Failed(r.string()?),
            NOT_SHIPPED => Reply::NotShipped,
            KERNEL_EXIT => Reply::KernelExit { status: r.i32()? },
            EXITING => Reply::Exiting {
                message: r.string()?,
                status: r.i32()?,
                client: r.i32()?,
            },
            other => return Err(Malformed(format!("unknown reply status {other}"))),
        };
        r.end()?;
        Ok(reply)
    }

    /// The payload, or why there is none.
    pub fn into_result(self) -> Result<P, ReplyError> {
        match self {
            Reply::Ok(payload) => Ok(payload),
            Reply::Failed(message) | Reply::Exiting { message, .. } => {
                Err(ReplyError::Refused(message))
            }
            Reply::NotShipped => Err(ReplyError::NotShipped),
            Reply::KernelExit { status } => Err(ReplyError::KernelExit(status)),
        }
    }

    /// Decode `message` and take its payload.
    pub fn payload(message: &[u8]) -> Result<P, ReplyError> {
        Self::decode(message)?.into_result()
    }
}

/// A successful reply with `payload` written in place by the closure (a
/// retrieve's bytes, straight from device memory).
pub fn ok_reply(payload: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(OK);
    payload(&mut w);
    w.finish()
}

/// A failed reply.
pub fn error_reply(message: &str) -> Vec<u8> {
    Reply::<()>::Failed(message.to_owned()).encode()
}

/// The reply to a `LoadBinary` that named bytes the server does not hold
/// (any more): the client ships them again.
pub fn not_shipped_reply() -> Vec<u8> {
    Reply::<()>::NotShipped.encode()
}

/// The reply to a `Run` whose kernel called `exit(status)`.
pub fn kernel_exit_reply(status: i32) -> Vec<u8> {
    Reply::<()>::KernelExit { status }.encode()
}

/// A server's refusal of a request after a kernel called `exit(status)`
/// for program rank `client` ([`EXITING`]).
pub fn exiting_reply(message: &str, status: i32, client: i32) -> Vec<u8> {
    Reply::<()>::Exiting {
        message: message.to_owned(),
        status,
        client,
    }
    .encode()
}

/// The status word of `message` and a reader after it (`None`: not a
/// message).
fn status_of(message: &[u8]) -> Option<(u32, Reader<'_>)> {
    let mut r = Reader::message(message).ok()?;
    Some((r.u32().ok()?, r))
}

/// The status of a [`kernel_exit_reply`], if `message` is one.
pub fn kernel_exit_status(message: &[u8]) -> Option<i32> {
    match status_of(message)? {
        (KERNEL_EXIT, mut r) => r.i32().ok(),
        _ => None,
    }
}

/// The status and the program rank of an [`exiting_reply`], if `message`
/// is one.
pub fn exiting_of(message: &[u8]) -> Option<(i32, i32)> {
    match status_of(message)? {
        (EXITING, _) => match Reply::<()>::decode(message).ok()? {
            Reply::Exiting { status, client, .. } => Some((status, client)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `message` is [`not_shipped_reply`].
pub fn is_not_shipped(message: &[u8]) -> bool {
    status_of(message).is_some_and(|(status, _)| status == NOT_SHIPPED)
}

/// Split a reply whose payload is read in place: `Ok(reader over the
/// payload)`, or why there is none.
pub fn read_reply(message: &[u8]) -> Result<Reader<'_>, ReplyError> {
    let (status, r) = match status_of(message) {
        Some(split) => split,
        // Not even a status: decoding says why.
        None => return Err(Reply::<()>::decode(message).map(drop).unwrap_err().into()),
    };
    if status == OK {
        return Ok(r);
    }
    Err(Reply::<()>::payload(message)
        .err()
        .unwrap_or_else(|| Malformed(format!("status {status}")).into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Request;

    /// Encode then decode gives `reply` back; every shorter prefix, and
    /// the message with a byte more, is an error, not a panic.
    fn round_trip<P: Payload + Clone + PartialEq + std::fmt::Debug>(reply: Reply<P>) {
        let message = reply.encode();
        assert_eq!(Reply::<P>::decode(&message), Ok(reply.clone()));
        for len in 0..message.len() {
            assert!(Reply::<P>::decode(&message[..len]).is_err(), "{len}");
        }
        let mut long = message.clone();
        long.push(0);
        assert!(Reply::<P>::decode(&long).is_err());
    }

    #[test]
    fn every_reply_decodes_to_itself() {
        round_trip(Reply::Ok(()));
        round_trip(Reply::Ok(Hello {
            devices: 4,
            host: "node-3".into(),
            plugin: "libomptarget.rtl.cuda.so".into(),
            machine: 190,
        }));
        round_trip(Reply::Ok(Loaded {
            entries: vec![0x1000, 0, u64::MAX],
        }));
        round_trip(Reply::Ok(Loaded {
            entries: Vec::new(),
        }));
        round_trip(Reply::Ok(Allocated { addr: 0xdead_0000 }));
        round_trip(Reply::Ok(Runners {
            devices: vec![0, 2, u32::MAX],
        }));
        round_trip(Reply::Ok(Runners {
            devices: Vec::new(),
        }));
        round_trip(Reply::Ok(Exited {
            summary: "rank 1: clean".into(),
        }));
        round_trip(Reply::<Hello>::Failed("no such device".into()));
        round_trip(Reply::<()>::NotShipped);
        round_trip(Reply::<()>::KernelExit { status: -3 });
        round_trip(Reply::<Allocated>::Exiting {
            message: "going away".into(),
            status: 7,
            client: 3,
        });
    }

    #[test]
    fn a_payload_that_does_not_fit_its_type_is_malformed() {
        // A Hello's fields, read as an allocation: trailing bytes.
        let hello = Reply::Ok(Hello {
            devices: 1,
            host: "h".into(),
            plugin: "p".into(),
            machine: 62,
        })
        .encode();
        assert!(Reply::<Allocated>::decode(&hello).is_err());
        // Entry addresses that are not whole.
        let ragged = ok_reply(|w| {
            w.u64(1).u32(2);
        });
        assert!(Reply::<Loaded>::decode(&ragged).is_err());
        // Device numbers that are not whole (a string's 8-byte length
        // and 1 byte).
        let torn = ok_reply(|w| {
            w.str("x");
        });
        assert!(Reply::<Runners>::decode(&torn).is_err());
        // An unknown status.
        let mut w = Writer::new();
        w.u32(99);
        assert!(Reply::<()>::decode(&w.finish()).is_err());
        assert!(read_reply(&[1, 2, 3]).is_err());
    }

    #[test]
    fn only_a_successful_reply_has_a_payload() {
        assert_eq!(
            Reply::Ok(Allocated { addr: 8 }).into_result(),
            Ok(Allocated { addr: 8 })
        );
        assert_eq!(
            Reply::<Allocated>::payload(&error_reply("full")),
            Err(ReplyError::Refused("full".into()))
        );
        assert_eq!(
            Reply::<Loaded>::payload(&not_shipped_reply()),
            Err(ReplyError::NotShipped)
        );
        assert_eq!(
            Reply::<()>::payload(&kernel_exit_reply(6)),
            Err(ReplyError::KernelExit(6))
        );
        assert!(matches!(
            read_reply(&kernel_exit_reply(6)),
            Err(ReplyError::KernelExit(6))
        ));
        assert!(is_not_shipped(&not_shipped_reply()));
        assert!(!is_not_shipped(&error_reply("x")));
    }

    #[test]
    fn an_exiting_reply_is_a_failure_that_names_the_exit() {
        let reply = exiting_reply("going away", 7, 3);
        assert_eq!(exiting_of(&reply), Some((7, 3)));
        assert_eq!(
            read_reply(&reply).err(),
            Some(ReplyError::Refused("going away".into()))
        );
        assert_eq!(kernel_exit_status(&reply), None);
        assert_eq!(exiting_of(&error_reply("going away")), None);
        assert_eq!(exiting_of(&kernel_exit_reply(7)), None);
        assert_eq!(kernel_exit_status(&kernel_exit_reply(7)), Some(7));
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
    fn replies_carry_payload_or_error() {
        let ok = ok_reply(|w| {
            w.u64(42);
        });
        assert_eq!(read_reply(&ok).unwrap().u64().unwrap(), 42);
        let failed = error_reply("no such device");
        assert_eq!(
            read_reply(&failed).unwrap_err().to_string(),
            "no such device"
        );
    }
}
