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
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static DEBUG: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether debug lines are enabled (the environment is read once).
#[inline]
pub fn debug_enabled() -> bool {
    match DEBUG.load(Ordering::Relaxed) {
        OFF => false,
        ON => true,
        _ => read_debug_setting(),
    }
}

/// [`debug_enabled`]'s first answer, from the environment.
#[cold]
#[inline(never)]
fn read_debug_setting() -> bool {
    let on = ["LIBOMPTARGET_DEBUG", "OMPTARGET_PLUGIN_DEBUG"]
        .iter()
        .any(|var| std::env::var(var).is_ok_and(|v| !v.is_empty() && v != "0"));
    DEBUG.store(if on { ON } else { OFF }, Ordering::Relaxed);
    on
}

/// Set once a runtime in this copy of the kit reads every failure's
/// message back (`__tgt_rtl_last_error_message`) into its own error values:
/// the built-in plugins of a Rust program. Their failures then print only
/// as debug lines, instead of on stderr beside the error the program gets.
/// (A plugin library has its own copy of this flag, never set.)
static ERRORS_RETURNED: AtomicBool = AtomicBool::new(false);

/// Declares that a runtime reads this copy of the kit's failures back as
/// errors (the runtime that uses built-in plugins): from then on they print
/// only as debug lines.
pub fn errors_are_returned() {
    ERRORS_RETURNED.store(true, Ordering::Relaxed);
}

/// Print `omptarget-rs plugin <plugin>: error in <entry>: <message>` (a
/// debug line only, when the runtime returns the message itself).
pub fn error(plugin: &str, entry: &str, message: &dyn Display) {
    if ERRORS_RETURNED.load(Ordering::Relaxed) {
        debug(plugin, &format_args!("error in {entry}: {message}"));
        return;
    }
    let line = format!("omptarget-rs plugin {plugin}: error in {entry}: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Print `omptarget-rs plugin <plugin>: warning: <message>`.
pub fn warning(plugin: &str, message: &dyn Display) {
    let line = format!("omptarget-rs plugin {plugin}: warning: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Print `omptarget-rs plugin <plugin> --> <message>` if debug is enabled.
/// Inlined: every entry asks (the data entries' debug line), and the
/// answer is one load; an out-of-line call cost about 20 instructions.
#[inline]
pub fn debug(plugin: &str, message: &dyn Display) {
    if debug_enabled() {
        print_debug(plugin, message);
    }
}

/// [`debug`]'s line, printed.
#[inline(never)]
fn print_debug(plugin: &str, message: &dyn Display) {
    let line = format!("omptarget-rs plugin {plugin} --> {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Replace this library's panic hook (once) with one that prints a single
/// line and nothing else.
///
/// A plugin cdylib has its own copy of std, hence its own panic hook. The
/// default one may capture and symbolise a backtrace (`RUST_BACKTRACE`),
/// which maps the library's file into a cache that outlives `dlclose`, and
/// looks up the current thread; neither belongs in a library that must
/// leave nothing behind when it is closed. Panics are caught at every entry
/// ([`crate::entry_bodies`]), which reports them too. The hook captures nothing,
/// so its `Box` allocates nothing that unloading the library would leak.
pub fn install_panic_hook<B: crate::Backend>() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            error(
                B::NAME,
                "a backend call",
                &format_args!("panicked{location}"),
            );
        }));
    });
}
