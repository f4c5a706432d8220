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
//! * `handles`: handles, numbers never given twice.
//! * `info`: the info queries' buffer and size protocol.
//! * `context`: what `olInit` creates: platforms, devices, queues and the
//!   `olMemAlloc` blocks, with handle checks.
//! * `device_info`: device and platform properties.
//! * `boundary`: what every entry shares (the boundary, LLVM's checks,
//!   the macros that define and export an entry).
//! * `entries`: the exported functions of the lifecycle, devices, memory
//!   and queues; `program_entries`: programs, symbols and launches over
//!   `programs` (what a host kernel is and how it is called);
//!   `event_entries`: events and host functions; `memory_entries`:
//!   filled and registered memory.
//!
//! * `queues`: a queue's order of work, its worker, events as positions.
//! * `items`: the items of a launch on a host device (a thread each, the
//!   group's barrier) and the table of ids a host kernel asks.
//!
//! Every entry is implemented; what a host device has no form for
//! (dynamic group memory, pinning on a device that would need it) is
//! `OL_ERRC_UNSUPPORTED`. A queue
//! runs its work at once while idle, else on a worker thread of its own
//! (`queues`). The last `olShutDown`
//! frees the program's `olMemAlloc` blocks and forgets every handle; the
//! runtime itself is torn down (and reported) at the session's end, with
//! the OpenMP path's, not at that `olShutDown`.

mod boundary;
pub(crate) mod context;
mod device_info;
mod entries;
pub(crate) mod errors;
mod event_entries;
mod handles;
mod info;
mod items;
mod memory_entries;
mod program_entries;
mod programs;
mod queues;

pub(crate) use context::OlState;

/// The end of the queues of a context the program never shut down, at
/// exit: how many workers were left running (`queues::Lane::stop`).
pub(crate) fn stop_at_exit(lanes: &[std::sync::Arc<queues::Lane>]) -> usize {
    lanes
        .iter()
        .filter(|lane| lane.stop() == queues::Stopped::LeftRunning)
        .count()
}
