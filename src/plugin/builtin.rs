//! Plugins built into this crate: the host plugin, so that a Rust program
//! gets devices from `Runtime::new(Config::default())` with no plugin file
//! staged and no variable set.
//!
//! This is the one module of the core that names a backend. The plugin
//! is the same code as `libomptarget.rtl.x86_64.so` (the host backend
//! behind the plugin kit's entry layer), presented through the same
//! [`EntryTable`](crate::abi::plugin::EntryTable) a library's symbols
//! resolve to, so its lifecycle and its lines in the shutdown report are
//! those of any plugin. A library has one plugin state per process; the
//! built-in plugin has [`HOST_INSTANCES`] of them, and each runtime claims
//! one, so runtimes on parallel threads (as `cargo test` runs them) each
//! get their own devices and their own lifecycle.

use omptarget_plugin_kit::builtin::Instance;

/// A plugin built into this crate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuiltinPlugin {
    /// The name shown in reports ([`crate::PluginInfo::name`]).
    pub name: &'static str,
    /// How many runtimes may use it at once.
    pub instances: usize,
    /// Instance `index`.
    pub instance: fn(usize) -> Option<Instance>,
}

#[cfg(feature = "builtin-host")]
omptarget_plugin_kit::builtin_instances!(
    mod host,
    omptarget_plugin_host::HostBackend,
    [i0, i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13, i14, i15]
);

/// How many runtimes of one process may use the built-in host plugin at
/// the same time.
#[cfg(feature = "builtin-host")]
pub const HOST_INSTANCES: usize = host::COUNT;
/// How many runtimes of one process may use the built-in host plugin at
/// the same time (none: built without feature `builtin-host`).
#[cfg(not(feature = "builtin-host"))]
pub const HOST_INSTANCES: usize = 0;

/// The built-in host plugin: x86_64 images run in-process, as the
/// `libomptarget.rtl.x86_64.so` plugin runs them (`OMPTARGET_HOST_DEVICES`
/// devices, default 4).
#[cfg(feature = "builtin-host")]
pub(crate) const HOST: BuiltinPlugin = BuiltinPlugin {
    // The library's name: the shim's host devices are the built-in ones,
    // and what it shows of them (reports, LLVM 22's device UIDs) is what
    // the library's would show.
    name: crate::plugin::discovery::HOST_PLUGIN_NAME,
    instances: HOST_INSTANCES,
    instance: host::instance,
};
