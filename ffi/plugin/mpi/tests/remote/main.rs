//! Remote devices over MPI, end to end: real `mpirun` jobs of one program
//! rank and device servers (`omptarget-mpi-device`), on this machine.
//!
//! One test binary, a module per topic:
//! * `abi`: the binding's constants and layouts against `mpi.h`;
//! * `programs`: the differential suite's C programs, built by clang 14,
//!   19 and 22, on remote devices only, against the same binaries on the
//!   local host plugin;
//! * `lifecycle`: how jobs end (exit status, `exit()`, killed program,
//!   the program's own MPI), and the plugin outside a job;
//! * `messages`: requests and replies longer than the receives posted
//!   for them;
//! * `rust_api`: the Rust API on remote devices;
//! * `silence`: a stopped server is a bounded error; a slow kernel is not;
//! * `spawned`: servers each program rank spawns for itself
//!   (`OMPTARGET_MPI_SPAWN`): MPI programs keeping their own MPI;
//! * `images`: each server offered only the images its devices can run;
//! * `exchanges`: copies between two servers' devices, crossing copies of
//!   two program ranks included;
//! * `faults`: a device server or the program killed under
//!   `mpirun --enable-recovery`.
mod abi;
mod exchanges;
mod faults;
mod images;
mod job;
mod lifecycle;
mod messages;
mod programs;
mod rust_api;
mod silence;
mod spawned;
mod valgrind;
