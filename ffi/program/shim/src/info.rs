//! `LIBOMPTARGET_INFO`, `__tgt_set_info_flag` and `__tgt_print_device_info`.
//!
//! LLVM 14 keeps one info level per loaded `libomptarget.so`: read from
//! `LIBOMPTARGET_INFO` once, replaced by `__tgt_set_info_flag`. A session
//! is shorter-lived (a new one follows the shutdown of the last), so the
//! level lives here, per process, and each new session starts from it: a
//! flag set through `__tgt_set_info_flag` is not lost to a later session.

use crate::boundary::guard;
use crate::export::export_c;
use crate::lifecycle::with_session;
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
fn read_env() {
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

extern "C-unwind" fn __tgt_set_info_flag(flags: u32) {
    guard("__tgt_set_info_flag", (), || {
        // Read the environment first, so that it cannot override the flag
        // later (LLVM's call_once runs before its store, too).
        read_env();
        INFO_LEVEL.store(flags, Ordering::Relaxed);
        with_session(|s| s.set_info_flag(flags));
    })
}

/// Returns true (1) if the device's plugin printed its information.
extern "C-unwind" fn __tgt_print_device_info(device_id: i64) -> i32 {
    guard("__tgt_print_device_info", 0, || {
        with_session(|s| s.print_device_info(device_id) as i32)
    })
}

export_c!(__tgt_set_info_flag, __tgt_print_device_info);
