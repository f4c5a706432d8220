//! Debug output through `tracing`.
//!
//! The runtime emits `tracing` events with `plugin` and `device` fields. With
//! `LIBOMPTARGET_DEBUG` at 1 or higher, [`install`] sets a stderr subscriber
//! (debug level; 2 and higher adds trace level), unless the process already
//! has a global subscriber, which then gets the events instead. Without a
//! subscriber every event is a disabled callsite: one relaxed atomic load.
//!
//! The subscriber is our own ([`stderr`]): it keeps nothing in
//! thread-locals, so debug output works during the shutdown at process exit
//! too (after the C runtime destroyed the thread-locals).
pub mod profile;
mod stderr;

use std::sync::Once;
use tracing::level_filters::LevelFilter;

static INSTALL: Once = Once::new();

/// The most verbose level `LIBOMPTARGET_DEBUG=debug_level` shows (1: debug,
/// 2 and higher: trace; 0: nothing).
fn max_level(debug_level: u32) -> LevelFilter {
    match debug_level {
        0 => LevelFilter::OFF,
        1 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// Install the stderr subscriber for `debug_level` >= 1 (once per process;
/// a no-op if a global subscriber is already set).
pub fn install(debug_level: u32) {
    if debug_level == 0 {
        return;
    }
    INSTALL.call_once(|| {
        let subscriber =
            stderr::LineSubscriber::new(max_level(debug_level), stderr::write_to_stderr);
        // Err means the host program already chose a subscriber: keep it.
        let _ = tracing::subscriber::set_global_default(subscriber);
        tracing::debug!(debug_level, "omptarget debug output enabled");
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_levels_map_to_tracing_levels() {
        assert_eq!(max_level(0), LevelFilter::OFF);
        assert_eq!(max_level(1), LevelFilter::DEBUG);
        assert_eq!(max_level(2), LevelFilter::TRACE);
        assert_eq!(max_level(7), LevelFilter::TRACE);
    }
}
