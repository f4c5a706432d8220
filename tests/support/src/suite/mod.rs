//! The C suites' machinery (`tests/c`, run by the root crate's
//! `differential` and `valgrind_c` tests): the programs and their header
//! directives ([`spec`]), building them with each release's clang and
//! caching the result ([`build`]), and running independent jobs on a few
//! threads ([`pool`]).

pub mod build;
pub mod pool;
pub mod spec;
