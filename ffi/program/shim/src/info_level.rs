//! The process's info and debug levels (`LIBOMPTARGET_INFO`,
//! `LIBOMPTARGET_DEBUG`, `__tgt_set_info_flag`), which each new session
//! starts from.
//!
//! LLVM 14 keeps one info level per loaded `libomptarget.so`: read from
//! `LIBOMPTARGET_INFO` once, replaced by `__tgt_set_info_flag`. A session
//! is shorter-lived (a new one follows the shutdown of the last), so the
//! level lives here, per process, and each new session starts from it: a
//! flag set through `__tgt_set_info_flag` is not lost to a later session.

use omptarget_abi::info_type;
use omptarget_openmp::Registry;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

static INFO_LEVEL: AtomicU32 = AtomicU32::new(0);
/// Non-zero `LIBOMPTARGET_DEBUG`: LLVM's release libomptarget (which has no
/// debug output) then prints no INFO line either, whatever the info level.
static DEBUG_LEVEL: AtomicU32 = AtomicU32::new(0);
static READ_ENV: Once = Once::new();

/// Read both variables, once per process, as LLVM parses them (`stoi`;
/// junk means 0 here, where LLVM's process would terminate). The closure
/// cannot panic, so `READ_ENV` is never poisoned.
pub(crate) fn read_env() {
    READ_ENV.call_once(|| {
        let level = |var: &str| {
            std::env::var_os(var).map_or(0, |v| {
                info_type::parse_level(v.to_string_lossy().as_bytes())
            })
        };
        INFO_LEVEL.store(level("LIBOMPTARGET_INFO"), Ordering::Relaxed);
        DEBUG_LEVEL.store(level("LIBOMPTARGET_DEBUG"), Ordering::Relaxed);
    });
}

/// Give a new session's registry the process's info (and debug) level.
pub(crate) fn configure(registry: &Registry) {
    read_env();
    registry.set_info_level(INFO_LEVEL.load(Ordering::Relaxed));
    registry.set_debug_level(DEBUG_LEVEL.load(Ordering::Relaxed));
}

/// `__tgt_set_info_flag`'s level, kept for later sessions. The environment
/// is read first, so that it cannot override the flag later (LLVM's
/// call_once runs before its store, too).
pub(crate) fn set_info_level(flags: u32) {
    read_env();
    INFO_LEVEL.store(flags, Ordering::Relaxed);
}
