//! Debug output through `tracing`.
//!
//! The runtime emits `tracing` events with `plugin` and `device` fields. With
//! `LIBOMPTARGET_DEBUG` at 1 or higher, [`install`] sets a stderr subscriber
//! (debug level; 2 and higher adds trace level), unless the process already
//! has a global subscriber, which then gets the events instead. Without a
//! subscriber every event is a disabled callsite: one relaxed atomic load.
use std::sync::Once;

static INSTALL: Once = Once::new();

/// Install the stderr subscriber for `debug_level` >= 1 (once per process;
/// a no-op if a global subscriber is already set).
pub fn install(debug_level: u32) {
    if debug_level == 0 {
        return;
    }
    INSTALL.call_once(|| {
        let max = if debug_level >= 2 {
            tracing::Level::TRACE
        } else {
            tracing::Level::DEBUG
        };
        let subscriber = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_max_level(max)
            .with_target(false)
            .with_thread_names(true)
            .finish();
        // Err means the host program already chose a subscriber: keep it.
        let _ = tracing::subscriber::set_global_default(subscriber);
        tracing::debug!(debug_level, "omptarget debug output enabled");
    });
}

/// True when debug events would be recorded; guards building expensive
/// debug-only data on hot paths.
#[inline]
pub fn debug_enabled() -> bool {
    tracing::enabled!(tracing::Level::DEBUG)
}
