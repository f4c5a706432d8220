//! `libomptarget.so`: LLVM 14's C ABI over the omptarget runtime.
//!
//! clang-14 offload binaries load this library instead of LLVM's. Every
//! exported function (see `exports.map`) decodes its C arguments, passes
//! them through one panic boundary ([`boundary::guard`]) and calls the
//! process-wide [`session::Session`], whose lifecycle [`lifecycle`] makes
//! explicit. Safe Rust begins past `session` (and the offload layer's `MapArgs`); nothing here
//! unwinds into C.

mod api;
mod api_since_llvm19;
mod boundary;
mod caller;
mod data;
mod export;
mod host_env;
mod info;
mod interop;
mod kernel;
mod libomp;
mod lifecycle;
mod mapper;
mod registration;
mod report_sink;
mod session;
mod target;
