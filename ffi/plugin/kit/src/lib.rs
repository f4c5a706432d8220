//! The generic half of every omptarget-rs plugin.
//!
//! A plugin is a cdylib exporting LLVM 14's `__tgt_rtl_*` C entries plus this
//! project's lifecycle entries (`omptarget_abi::plugin`). Writing those
//! entries by hand for each plugin would repeat the same argument checks,
//! panic boundaries and lifecycle bookkeeping, so, like LLVM's
//! `plugins-nextgen` GenericPlugin, the work is split:
//!
//! * a backend implements [`Backend`]: a safe Rust trait speaking in checked
//!   device ids, slices and `Result`s;
//! * the cdylib invokes [`export_plugin!`] with that type, which exports every
//!   entry as `#[no_mangle] extern "C"` and routes it through `entry_bodies`:
//!   a panic boundary, argument checks, lazy or explicit initialisation, the
//!   per-device init state, then the backend call.
//!
//! Plugin state lives in a [`PluginCell`] static that has no destructor: it
//! is created by `__tgt_rtl_init_plugin` (or lazily by the first other entry,
//! because LLVM 14's own libomptarget never calls `init_plugin`) and dropped
//! by `__tgt_rtl_deinit_plugin`. The only global-teardown hook is the
//! `.fini_array` safety net described in [`safety_net`].
//!
//! The kit names no backend. Each backend is a crate of its own, like the
//! backends of LLVM's `plugins-nextgen` next to its `common/`: the x86_64
//! host backend is `omptarget-plugin-host` (`ffi/plugin/host`), and the
//! CUDA one sits beside it (`omptarget-plugin-cuda`, `ffi/plugin/cuda`).
//! The plugin contract, both sides, and what the kit adds to LLVM's
//! entries: `docs/plugins.md` in the repository.
//!
//! # Module map
//!
//! * [`backend`]: the [`Backend`] trait and the checked values it receives.
//! * [`boundary`]: how an entry body meets its caller (a C entry's panic
//!   boundary, or a native call's none).
//! * `entry_bodies`: the body of every C entry, generic over the backend
//!   (panic boundary, argument checks, lazy initialisation).
//! * `export` ([`export_plugin!`], [`builtin_instances!`]) and [`builtin`]:
//!   exporting the entries from a cdylib, or declaring built-in instances
//!   a runtime calls directly.
//! * [`cell`]: [`PluginCell`], the plugin state and its lifecycle.
//! * `state_lock`: the [`omptarget_lifecycle::ReadMostly`] lock backends use
//!   for state every entry reads.
//! * [`fork`]: the plugin's own locks held across a `fork`.
//! * [`safety_net`]: the `.fini_array` function, the only global teardown.
//! * [`error`]: the error of backend calls and entry checks;
//!   [`last_error`]: the thread's last failure message
//!   (`__tgt_rtl_last_error_message`); `diagnostics`: messages to stderr.
//! * [`address_map`]: a hash map keyed by addresses, for tables of live
//!   blocks.
//! * `testing` (feature `testing`): helpers for the plugins' own tests.

#![deny(missing_docs)]

pub mod address_map;
pub mod backend;
pub mod boundary;
pub mod builtin;
pub mod cell;
pub mod diagnostics;
pub mod entry_bodies;
pub mod error;
mod export;
pub mod fork;
mod fork_locks;
pub mod last_error;
pub mod safety_net;
pub mod state_lock;
#[cfg(feature = "testing")]
pub mod testing;

pub use backend::{
    pointer_args_only, AsyncQueue, Backend, DeviceId, DeviceInfoValue, EntryCall, ImageRef,
    InitCause, LoadOptions, TeamConfig,
};
pub use cell::PluginCell;
pub use error::PluginError;
/// The ABI crate, re-exported so that [`export_plugin!`] can name its types
/// from any plugin crate.
pub use omptarget_abi as abi;
