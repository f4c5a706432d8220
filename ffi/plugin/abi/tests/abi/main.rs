//! The ABI tests: one binary, a module per topic (`cargo test -p
//! omptarget-abi --test abi layout::`), with the machinery they share in
//! `common` (a clang of each release, LLVM's own layouts, ELF reading).

#[macro_use]
mod common;
mod layout;
mod llvm14_plugin;
