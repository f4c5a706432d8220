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
//!
//! Its parts: [`codec`] (the fields and the length header), [`request`]
//! (what a server is asked: [`Request`], [`Op`]) and [`reply`] (what it
//! answers: [`Reply`] and the payload of each request's reply).
pub mod codec;
pub mod reply;
pub mod request;

pub use codec::{message_len, Malformed, Reader, Writer};
pub use reply::{
    error_reply, exiting_of, exiting_reply, is_not_shipped, kernel_exit_reply, kernel_exit_status,
    not_shipped_reply, ok_reply, read_reply, Allocated, Exited, Hello, Loaded, Payload, Reply,
    ReplyError, Runners, EXITING, FAILED, KERNEL_EXIT, NOT_SHIPPED, OK,
};
pub use request::{reply_tag_of, EntrySpec, InlineCopy, Op, Request};

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
/// The first reply tag; tags below are reserved (3 and 4: a liveness
/// ping and its pong, `world::liveness`). The reply tags are the
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
