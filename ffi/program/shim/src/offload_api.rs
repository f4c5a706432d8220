//! LLVM's new offload API (`ol*`, liboffload: LLVM 22's `OffloadAPI.h`,
//! whose library is `libLLVMOffload.so.22.1`) over the session's runtime.
//!
//! This library is also staged under the name `libLLVMOffload.so.22.1`
//! (a link to `libomptarget.so`), so a program built against Debian's
//! header and library runs on it through `LD_LIBRARY_PATH`, and a process
//! that uses OpenMP offload and `ol*` at once loads one file: one session,
//! one runtime, one set of devices and memory managers. LLVM's library
//! exports its `ol*` symbols with the version node `VERS1.0`, the one the
//! OpenMP exports already carry here.
//!
//! * `errors`: `ol_result_t`, the static error objects.
//! * `info`: the info queries' buffer and size protocol.
//! * `context`: what `olInit` creates: platforms, devices, queues and the
//!   `olMemAlloc` blocks, with handle checks.
//! * `device_info`: device and platform properties.
//! * `entries`: the exported functions.
//!
//! What this first part does not do yet (each such entry returns
//! `OL_ERRC_UNIMPLEMENTED`): events, programs and symbols, kernel
//! launches, fills, host functions, registered memory, occupancy. Queued
//! operations complete before their call returns. The last `olShutDown`
//! frees the program's `olMemAlloc` blocks and forgets every handle; the
//! runtime itself is torn down (and reported) at the session's end, with
//! the OpenMP path's, not at that `olShutDown`.

pub(crate) mod context;
mod device_info;
mod entries;
pub(crate) mod errors;
mod info;

pub(crate) use context::OlState;
