//! Shared machinery for the C/C++ program suites (`tests/differential.rs`,
//! `tests/valgrind_c.rs`): finding and parsing the programs in `tests/c`,
//! building them with clang-14, running them with a timeout, comparing and
//! diffing outputs, running work in parallel, staging our runtime.
//!
//! Each test crate uses a different subset of these helpers, so unused-item
//! warnings are silenced for the module as a whole.
#![allow(dead_code)]

pub mod build;
pub mod compare;
pub mod exec;
pub mod paths;
pub mod pool;
pub mod release;
pub mod spec;
pub mod stage;
pub mod valgrind_xml;
