//! [`ServeError`]: why the server could not start, could not go on, or
//! failed a request (whose reply then carries its text).
use omptarget_mpi_wire::world::{JoinError, ThreadLevel};
use omptarget_mpi_wire::{MpiError, WireError};

/// Why serving, or one request, failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// An exchange on the wire failed (it keeps what MPI may still write
    /// into).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// Joining the job failed.
    #[error(transparent)]
    Join(#[from] JoinError),
    /// MPI's thread level is too low.
    #[error(transparent)]
    ThreadLevel(#[from] ThreadLevel),
    /// An MPI call failed (leaving the job).
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// The server's own runtime could not be built.
    #[error("its runtime: {0}")]
    Runtime(omptarget::Error),
    /// The exit handler could not be registered.
    #[error("on_exit failed")]
    OnExit,
    /// `OMPTARGET_MPI_TIMEOUT` is not a number of seconds.
    #[error(transparent)]
    BadLimit(#[from] omptarget_mpi_wire::world::liveness::BadLimit),
    /// The thread answering pings could not start.
    #[error("cannot start the thread answering pings: {0}")]
    Responder(std::io::Error),
    /// The local plugin has remote devices, which a server cannot serve.
    #[error("a device server cannot serve remote devices ({plugin}'s)")]
    RemoteDevices {
        /// That plugin's name.
        plugin: String,
    },
    /// No such device here.
    #[error("device {id}: {source}")]
    NoDevice {
        /// The device asked for.
        id: u32,
        /// The runtime's answer.
        source: omptarget::Error,
    },
    /// The device (its plugin) failed the request.
    #[error(transparent)]
    Device(#[from] omptarget::Error),
    /// The request is refused: it names what the client does not own, or
    /// is not well formed.
    #[error("{0}")]
    Refused(String),
    /// Several of a release's steps failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<omptarget::Error>),
    /// An earlier one-way copy of the client's failed (its request had no
    /// reply; this one answers it).
    #[error("{0}")]
    Earlier(String),
    /// This request failed, and an earlier one-way copy too.
    #[error("{now}; {earlier}")]
    AfterEarlier {
        /// This request's failure.
        now: Box<ServeError>,
        /// The earlier copy's.
        earlier: String,
    },
}
