//! The one place the runtime chooses between a plugin's blocking entry and
//! its `_async` variant. Our plugins run both on one implementation (the
//! kit's blocking entry is the operation on a local queue, then a
//! synchronise), and so does LLVM's runtime with its plugins: the runtime
//! uses the `_async` entry on a private queue and synchronises it. Only a
//! plugin without the `_async` entries (LLVM 14's, e.g.
//! `/usr/lib/llvm-14/lib/libomptarget.rtl.x86_64.so`, need not export
//! them) gets the blocking entry: that fallback is here and nowhere else.
use super::with_queue;
use crate::abi::plugin::{OptionalEntry, PluginCalls};
use crate::abi::{self, AsyncInfo};
use crate::plugin::Exported;
use std::ffi::c_void;

/// One operation of an entry pair (`__tgt_rtl_X` / `__tgt_rtl_X_async`),
/// with its arguments as the ABI passes them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PluginOp {
    /// `data_submit`: `size` bytes host `src` -> device `dst`.
    Submit {
        device: i32,
        dst: *mut c_void,
        src: *mut c_void,
        size: i64,
    },
    /// `data_retrieve`: `size` bytes device `src` -> host `dst`.
    Retrieve {
        device: i32,
        dst: *mut c_void,
        src: *mut c_void,
        size: i64,
    },
    /// `data_exchange`: `size` bytes device to device.
    Exchange {
        src_device: i32,
        src: *mut c_void,
        dst_device: i32,
        dst: *mut c_void,
        size: i64,
    },
    /// `run_target_region`.
    Region {
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
    },
    /// `run_target_team_region`.
    TeamRegion {
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
    },
}

impl PluginOp {
    /// The device whose queue the operation runs on.
    fn device(self) -> i32 {
        match self {
            PluginOp::Submit { device, .. }
            | PluginOp::Retrieve { device, .. }
            | PluginOp::Region { device, .. }
            | PluginOp::TeamRegion { device, .. } => device,
            PluginOp::Exchange { src_device, .. } => src_device,
        }
    }

    /// Whether the plugin exports this operation's `_async` entry.
    #[inline]
    pub(crate) fn has_queued_entry(self, exported: Exported) -> bool {
        exported.has(match self {
            PluginOp::Submit { .. } => OptionalEntry::DataSubmitAsync,
            PluginOp::Retrieve { .. } => OptionalEntry::DataRetrieveAsync,
            PluginOp::Exchange { .. } => OptionalEntry::DataExchangeAsync,
            PluginOp::Region { .. } => OptionalEntry::RunTargetRegionAsync,
            PluginOp::TeamRegion { .. } => OptionalEntry::RunTargetTeamRegionAsync,
        })
    }

    /// Run the operation and wait for it: its `_async` entry on a private
    /// queue, then `synchronize` (as LLVM's runtime does); for a plugin
    /// without them, its blocking entry. Returns the plugin's code.
    ///
    /// # Safety
    /// The arguments are valid for the entry (each variant's ABI contract).
    pub(crate) unsafe fn run_and_wait(self, e: &dyn PluginCalls, exported: Exported) -> i32 {
        if exported.has(OptionalEntry::Synchronize) && self.has_queued_entry(exported) {
            // SAFETY: per this function's contract; `q` is a fresh queue.
            with_queue(self.device(), e, |q| unsafe { self.queued(e, q) })
        } else {
            // SAFETY: per this function's contract.
            unsafe { self.blocking(e) }
        }
    }

    /// Queue the operation on `queue` with its `_async` entry; a plugin
    /// without one runs its blocking entry (the caller first synchronises
    /// `queue`, so that it does not overtake what is queued:
    /// [`PluginOp::has_queued_entry`]).
    ///
    /// # Safety
    /// The arguments are valid for the entry until `queue` is synchronised;
    /// `queue` is empty or set by this plugin for the operation's device.
    pub(crate) unsafe fn run_on(
        self,
        e: &dyn PluginCalls,
        exported: Exported,
        queue: *mut AsyncInfo,
    ) -> i32 {
        if self.has_queued_entry(exported) {
            // SAFETY: per this function's contract.
            unsafe { self.queued(e, queue) }
        } else {
            // SAFETY: per this function's contract.
            unsafe { self.blocking(e) }
        }
    }

    /// The `_async` entry on `q`; the caller checked it is exported.
    ///
    /// # Safety
    /// As [`PluginOp::run_on`].
    unsafe fn queued(self, e: &dyn PluginCalls, q: *mut AsyncInfo) -> i32 {
        // SAFETY: every arm calls an entry with the arguments this
        // function's contract vouches for.
        unsafe {
            match self {
                PluginOp::Submit {
                    device,
                    dst,
                    src,
                    size,
                } => e.data_submit_async(device, dst, src, size, q),
                PluginOp::Retrieve {
                    device,
                    dst,
                    src,
                    size,
                } => e.data_retrieve_async(device, dst, src, size, q),
                PluginOp::Exchange {
                    src_device,
                    src,
                    dst_device,
                    dst,
                    size,
                } => e.data_exchange_async(src_device, src, dst_device, dst, size, q),
                PluginOp::Region {
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                } => e.run_target_region_async(device, entry, args, offsets, num_args, q),
                PluginOp::TeamRegion {
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    num_teams,
                    thread_limit,
                    loop_tripcount,
                } => e.run_target_team_region_async(
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    num_teams,
                    thread_limit,
                    loop_tripcount,
                    q,
                ),
            }
        }
        .unwrap_or(abi::OFFLOAD_FAIL)
    }

    /// The blocking entry (`data_exchange` is optional: a plugin without
    /// either exchange entry fails the operation).
    ///
    /// # Safety
    /// The arguments are valid for the entry during the call.
    unsafe fn blocking(self, e: &dyn PluginCalls) -> i32 {
        // SAFETY: every arm calls an entry with the arguments this
        // function's contract vouches for.
        unsafe {
            match self {
                PluginOp::Submit {
                    device,
                    dst,
                    src,
                    size,
                } => e.data_submit(device, dst, src, size),
                PluginOp::Retrieve {
                    device,
                    dst,
                    src,
                    size,
                } => e.data_retrieve(device, dst, src, size),
                PluginOp::Exchange {
                    src_device,
                    src,
                    dst_device,
                    dst,
                    size,
                } => e
                    .data_exchange(src_device, src, dst_device, dst, size)
                    .unwrap_or(abi::OFFLOAD_FAIL),
                PluginOp::Region {
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                } => e.run_target_region(device, entry, args, offsets, num_args),
                PluginOp::TeamRegion {
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    num_teams,
                    thread_limit,
                    loop_tripcount,
                } => e.run_target_team_region(
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    num_teams,
                    thread_limit,
                    loop_tripcount,
                ),
            }
        }
    }
}
