//! Standing in for a program rank that never joined the job.
//!
//! The device servers join collectively with every program rank, inside
//! `MPI_Init_thread` and the join's `MPI_Allgather`: a program rank that
//! ends without ever starting the offload runtime (`/bin/true`, a script
//! that never runs an offload program) leaves them waiting for ever.
//! `omptarget run --mpi N` therefore starts the program's rank through a
//! wrapper (`omptarget`'s hidden `mpi-program-rank`), which runs the
//! program as its child and, if the program ended without joining, joins
//! in its place, tells every server this rank is done, leaves, and exits
//! with the program's status.
//!
//! The handshake: the wrapper creates an empty file and names it in
//! [`MARK_VAR`]; a program rank removes it as it starts to join
//! ([`taking_the_rank`], before `MPI_Init_thread`), so the rank is
//! claimed at most once. A file, not an inherited descriptor: a program
//! may close or reuse descriptors it did not open, and a write into a
//! reused one would land in the program's own file.
use crate::client::{CallError, Client};

pub use crate::rank_mark::{taking_the_rank, MARK_VAR};

pub use crate::client::Acks;

/// Join the job as a program rank, tell every server this rank is done
/// (as the plugin's own teardown does, [`Client::close`]), and leave MPI.
/// `why` is what a later request would have been refused with.
pub fn stand_in(why: &str) -> Result<Acks, CallError> {
    let Some(client) = Client::connect()? else {
        // A job without servers: connect left MPI already.
        return Ok(Vec::new());
    };
    let acks = client.close(why);
    client.leave()?;
    Ok(acks)
}
