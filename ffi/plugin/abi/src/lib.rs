//! The `repr(C)` types of LLVM's OpenMP offload ABI.
//!
//! Two interfaces meet here:
//! * compiler -> runtime: what clang emits into an offload binary
//!   ([`OffloadEntry`], [`DeviceImage`], [`BinDesc`], [`KernelArgsV3`]) and the
//!   map-type flags passed to `__tgt_target_*`;
//! * runtime -> plugin: the `__tgt_rtl_*` entry points ([`plugin`]).
//!
//! This crate holds data layouts and constants only (plus the parse of
//! `LIBOMPTARGET_INFO`, which runtime and plugins must agree on, and
//! [`plugin::PluginCalls`], the entries as one Rust trait that a runtime
//! calls a library's C table and a built-in plugin through). It is
//! shared by the runtime core, the plugins and the libomptarget shim so that
//! all of them agree on one definition.
//!
//! Modules: [`entry`] (offload entries in both layouts, device images,
//! binary descriptors, target tables), [`flags`] (map-type, requires,
//! declare-target and allocation-kind flags, the `LIBOMPTARGET_INFO`
//! bits), [`kernel_args`] (the argument block of `__tgt_target_kernel`),
//! [`plugin`] (the `__tgt_rtl_*` entry points).

#![no_std]
#![deny(missing_docs)]

pub mod entry;
pub mod flags;
pub mod kernel_args;
pub mod plugin;

pub use entry::{
    AsyncInfo, BinDesc, DeviceImage, DeviceInfo, OffloadEntry, OffloadEntryV1, OffloadEntryV2,
    TargetNonContig, TargetTable,
};
pub use flags::*;
pub use kernel_args::{KernelArgsHeader, KernelArgsV1, KernelArgsV2, KernelArgsV3, KernelFlags};

/// Return code for success of plugin and runtime entries.
pub const OFFLOAD_SUCCESS: i32 = 0;
/// Return code for failure of plugin and runtime entries (`~0`).
pub const OFFLOAD_FAIL: i32 = !0;
/// An extension of ours: `__tgt_rtl_deinit_plugin` of a plugin built on our
/// kit returns it when calls stayed inside the plugin for its whole bounded
/// wait (a kernel still running): the plugin kept its state. Any runtime
/// reads it as a failure (it is not `OFFLOAD_SUCCESS`); ours then leaves the
/// library loaded instead of unmapping code that may still run.
pub const OFFLOAD_IN_USE: i32 = 2;
/// `OFFLOAD_DEVICE_DEFAULT`: the device number meaning "the default device".
pub const OFFLOAD_DEVICE_DEFAULT: i64 = -1;

/// `__tgt_target_return_t`: what `__tgt_target*` returns.
pub const OMP_TGT_SUCCESS: i32 = 0;
/// Offload did not happen (device unavailable); the caller falls back to host.
pub const OMP_TGT_FAIL: i32 = !0;
