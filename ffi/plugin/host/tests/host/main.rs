//! The host plugin's integration tests: one binary, a module per topic
//! (`cargo test -p omptarget-plugin-host --test host <module>::`), with
//! the helpers they share in `helpers`.

mod bad_input;
mod binding;
mod env;
mod helpers;
mod kernels;
mod lifecycle;
mod openmp;
mod valgrind;
