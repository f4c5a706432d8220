//! The typed error of the runtime's library API.

/// Result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the runtime's API can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid device number {0}")]
    InvalidDevice(i64),
    // H2 adds the rest.
}
