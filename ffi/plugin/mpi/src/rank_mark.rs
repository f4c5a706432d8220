//! The `omptarget run --mpi` wrapper's mark (`stand_in` says why it
//! exists): a process about to join as a program rank removes it. Its own
//! module, below the client that removes it and the stand-in that the
//! wrapper runs.

/// The variable naming the wrapper's mark file.
pub const MARK_VAR: &str = "OMPTARGET_MPI_RANK_MARK";

/// This process is about to join as a program rank: remove the wrapper's
/// mark, so that the wrapper does not join a second time after it ends.
/// Nothing to do outside such a wrapper.
pub fn taking_the_rank() {
    if let Some(path) = std::env::var_os(MARK_VAR).filter(|p| !p.is_empty()) {
        // Already gone: another process of the program took the rank
        // (which joins it a second time: the MPI job's own error).
        let _ = std::fs::remove_file(path);
    }
}
