//! `libomptarget.so`: LLVM 14's C ABI over the omptarget runtime.
//!
//! clang-14 offload binaries load this library instead of LLVM's. Every
//! exported function (see `exports.map`) decodes its C arguments, passes
//! them through one panic boundary ([`boundary::guard`]) and calls the
//! process-wide [`session::Session`], whose lifecycle [`lifecycle`] makes
//! explicit. Safe Rust begins past `args` and `session`; nothing here
//! unwinds into C.

mod api;
mod args;
mod boundary;
mod data;
mod export;
mod info;
mod interop;
mod libomp;
mod lifecycle;
mod mapper;
mod registration;
mod report;
mod session;
mod target;
