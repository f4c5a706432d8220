//! The call log, and finding this library's own path.
//!
//! The log path is cached in a static (no destructor) so that recording a
//! call does not re-read the conf; it is resolved again after
//! `deinit_plugin` (a test may change the conf between initialisations).

use crate::conf::Conf;
use omptarget_plugin_kit::diagnostics;
use std::ffi::CStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Plugin name in messages.
pub const NAME: &str = "test";

static LOG_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// This library's path, as the dynamic loader knows it.
pub fn library_path() -> Option<PathBuf> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let here = library_path as fn() -> Option<PathBuf> as *const libc::c_void;
    // SAFETY: dladdr only reads the address and fills `info`.
    let found = unsafe { libc::dladdr(here, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

/// The log path of the conf as it is now (the default if it is unusable).
fn resolve_log_path() -> Option<PathBuf> {
    let library = library_path()?;
    Some(match Conf::load(&library) {
        Ok(conf) => conf.log,
        Err(_) => Conf::defaults(&library).log,
    })
}

/// Use `path` for the log from now on.
/// The log's lock, held across a fork (see `omptarget_plugin_kit::fork`).
pub fn lock_for_fork() -> omptarget_plugin_kit::fork::ForkLocks<'static> {
    vec![Box::new(
        LOG_PATH.lock().unwrap_or_else(PoisonError::into_inner),
    )]
}

pub fn set_log_path(path: PathBuf) {
    *LOG_PATH.lock().unwrap_or_else(PoisonError::into_inner) = Some(path);
}

/// Forget the log path; the next record resolves it from the conf.
pub fn forget_log_path() {
    *LOG_PATH.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Append `line` to the log.
pub fn record(line: &dyn std::fmt::Display) {
    let path = {
        let mut cached = LOG_PATH.lock().unwrap_or_else(PoisonError::into_inner);
        if cached.is_none() {
            *cached = resolve_log_path();
        }
        cached.clone()
    };
    if let Some(path) = path {
        append(&path, line);
    }
}

/// Append `line` from the safety net: takes the cached path only if its
/// lock is free (another thread may hold it at exit).
pub fn record_at_unload(line: &dyn std::fmt::Display) {
    let cached = match LOG_PATH.try_lock() {
        Ok(guard) => guard.clone(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    if let Some(path) = cached.or_else(resolve_log_path) {
        append(&path, line);
    }
}

/// One `write` of the whole line to a file opened for appending.
fn append(path: &Path, line: &dyn std::fmt::Display) {
    let text = format!("{line}\n");
    let result = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()));
    if let Err(e) = result {
        diagnostics::warning(
            NAME,
            &format_args!("cannot append to {}: {e}", path.display()),
        );
    }
}
