//! What the MPI plugin (`omptarget-plugin-mpi`, on the program's ranks)
//! and its device server (`omptarget-mpi-device`, on the other ranks)
//! share: the wire between them, in layers, as cudarc layers its driver
//! (`sys`, `result`, `safe`):
//!
//! * [`mpi`]: the raw binding: Open MPI's `libmpi.so.40` or MPICH's `libmpich.so.12`, opened at run
//!   time (why not the `mpi` crate: see there); its calls return codes.
//! * [`error`]: typed results: [`MpiError`] (a call failed),
//!   [`Failure`] (an exchange failed) and [`WireError`], which owns the
//!   buffer of a receive MPI may still write into, so that no caller can
//!   free it.
//! * [`world`]: joining the job, the plugin's own communicator, who is a
//!   server, and moving bytes and messages between ranks, each wait
//!   bounded by its peer's life.
//! * [`protocol`]: the messages: typed requests ([`protocol::Request`])
//!   and replies ([`protocol::Reply`]), their tags and their encoding.
//!
//! The protocol, its threads and its place in the teardown order:
//! `docs/mpi.md` in the repository.
#![deny(missing_docs)]

pub mod error;
pub mod mpi;
pub mod protocol;
pub mod world;

pub use error::{Failure, MpiError, WireError};
