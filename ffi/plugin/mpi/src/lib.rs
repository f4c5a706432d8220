//! Remote devices over MPI: the backend of `libomptarget.rtl.mpi.so`, the
//! program's side of the wire its device server (`omptarget-mpi-device`) speaks.
//!
//! In an MPI job (`mpirun -np 1 ./app : -np N omptarget-mpi-device`), the
//! program's ranks load this plugin like any other; each device server
//! serves its local plugin's devices, and they become the program's
//! devices after the local ones. Outside a job, or with no server in it,
//! the plugin opens no MPI library and reports 0 devices, silently.
//!
//! * [`mpi`], [`error`], [`world`], [`protocol`]: the wire, shared with
//!   the device server: crate `omptarget-mpi-wire` (the binding, the typed
//!   errors, joining the job, the typed requests and replies), re-exported.
//! * [`client`]: the program's side: requests and bulk data, and
//!   [`CallError`], why a call failed.
//! * [`kernel_exit`]: the other threads' calls while a kernel's `exit()` on a
//!   remote device ends the program.
//! * [`finalize_hook`]: closing the servers when the program finalises MPI
//!   before the runtime's teardown.
//! * [`backend`]: [`MpiBackend`], the kit's backend over the client.
//! * [`program_init`]: the program's `MPI_Init` answered by the plugin
//!   when it initialised MPI first (spawned servers).
//! * [`spawn`]: this program rank's own servers, started with
//!   `MPI_Comm_spawn` (`OMPTARGET_MPI_SPAWN=N`).
//! * [`stand_in`]: joining (and leaving at once) in place of a program
//!   rank that ended without joining, for `omptarget run --mpi`.
//!
//! The protocol, its threads and its place in the teardown order:
//! `docs/mpi.md` in the repository.
#![deny(missing_docs)]

pub mod backend;
pub mod client;
pub mod finalize_hook;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod got;
pub mod kernel_exit;
pub mod program_init;
mod rank_mark;
pub mod spawn;
pub mod stand_in;

pub use backend::MpiBackend;
pub use client::CallError;
pub use omptarget_mpi_wire::{error, mpi, protocol, world, WireError};
