//! The safety net: the plugin's only global-teardown hook.
//!
//! [`crate::export_plugin!`] places one function pointer in the cdylib's
//! `.fini_array`, so the dynamic loader calls [`run`] when the library is
//! unloaded (`dlclose`) or the process exits. It exists for one situation:
//! the plugin is destroyed while still initialised (the runtime never called
//! `__tgt_rtl_deinit_plugin`, e.g. the process exits early). Then, if the
//! runtime registered a destruction callback, it calls `callback(data)` so
//! the runtime marks the plugin dead and never calls into it again.
//!
//! It deliberately does nothing else: it takes no lock (another thread may
//! hold one at exit), frees nothing and does not touch the plugin state.
//! There are no other teardown hooks: no `__cxa_atexit` registrations, no
//! statics with `Drop`, no thread-locals with destructors.

use crate::backend::Backend;
use crate::cell::PluginCell;
use crate::diagnostics;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Body of the `.fini_array` function; never unwinds.
pub fn run<B: Backend>(cell: &PluginCell<B>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        B::on_unload();
        if !cell.is_live() {
            return;
        }
        match cell.destruction_cb() {
            Some((callback, data)) => {
                diagnostics::debug(
                    B::NAME,
                    &"unloaded while initialised: calling the destruction callback",
                );
                // SAFETY: the runtime registered this callback and data for
                // exactly this call.
                unsafe { callback(data) }
            }
            None => diagnostics::debug(
                B::NAME,
                &"unloaded while initialised, and no destruction callback is registered",
            ),
        }
    }));
}
