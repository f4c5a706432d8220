//! Messages to stderr: errors always, debug lines on request.
//!
//! A plugin is a cdylib with its own copy of every Rust crate, so a tracing
//! subscriber installed by the runtime would never see its events; plain
//! stderr lines are what reaches the user. Debug lines are enabled by
//! `LIBOMPTARGET_DEBUG` (LLVM's variable, any value other than `0`) or
//! `OMPTARGET_PLUGIN_DEBUG`. Nothing here panics: a failed write to stderr
//! is ignored.

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static DEBUG: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether debug lines are enabled (the environment is read once).
pub fn debug_enabled() -> bool {
    match DEBUG.load(Ordering::Relaxed) {
        OFF => false,
        ON => true,
        _ => {
            let on = ["LIBOMPTARGET_DEBUG", "OMPTARGET_PLUGIN_DEBUG"]
                .iter()
                .any(|var| std::env::var(var).is_ok_and(|v| !v.is_empty() && v != "0"));
            DEBUG.store(if on { ON } else { OFF }, Ordering::Relaxed);
            on
        }
    }
}

/// Print `omptarget-rs plugin <plugin>: error in <entry>: <message>`.
pub fn error(plugin: &str, entry: &str, message: &dyn Display) {
    let line = format!("omptarget-rs plugin {plugin}: error in {entry}: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Print `omptarget-rs plugin <plugin>: warning: <message>`.
pub fn warning(plugin: &str, message: &dyn Display) {
    let line = format!("omptarget-rs plugin {plugin}: warning: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Print `omptarget-rs plugin <plugin> --> <message>` if debug is enabled.
pub fn debug(plugin: &str, message: &dyn Display) {
    if debug_enabled() {
        let line = format!("omptarget-rs plugin {plugin} --> {message}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}
