//! Plugins: the `libomptarget.rtl.*.so` libraries that drive devices.
//!
//! A [`Plugin`] is one opened library with its entries resolved once into a
//! table of fn pointers. It is loaded by `loader`, shared (`Arc`) by its
//! devices, and closed by the runtime's teardown after `deinit_plugin`. The
//! plugin may be destroyed behind the runtime's back; its destruction
//! callback then flips `liveness::Liveness`, and from that moment every
//! call into it fails with [`crate::Error::PluginDead`] instead of jumping
//! into unmapped code.
pub(crate) mod builtin;
mod claim;
pub(crate) mod discovery;
pub(crate) mod entry_table;
pub(crate) use entry_table::Exported;
pub(crate) mod liveness;
pub(crate) mod loader;

use crate::step_outcome::StepOutcome;
use crate::{Error, Result};
use entry_table::Calls;
use libloading::Library;
use liveness::Liveness;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

pub use discovery::{mpi_plugin_of_this_job, DEFAULT_PLUGIN_NAMES, MPI_PLUGIN_NAME};
pub use loader::{SkipReason, SkippedPlugin};
// Limits the loader enforces; its errors state them, so programs need not
// name them (hidden from these docs, as the rest of the raw layer).
#[doc(hidden)]
pub use loader::{MAX_DEVICES, MAX_DEVICES_PER_PLUGIN};

// The raw layer: the OpenMP layer's handle on a plugin (docs/openmp.md);
// programs see plugins through `PluginInfo` and the shutdown report.
#[doc(hidden)]
/// One loaded plugin library. Owned by the runtime (shared with its
/// devices); closed only by the runtime's teardown.
pub struct Plugin {
    name: String,
    path: PathBuf,
    /// Its entries: a library's C table, or a built-in plugin's native calls.
    entries: Calls,
    /// Which optional entries `entries` has (asked once).
    exported: entry_table::Exported,
    device_count: usize,
    first_device: usize,
    /// The plugin holds `liveness`'s address as callback data.
    callback_registered: bool,
    /// `deinit_plugin` returned success: the plugin forgot the callback.
    deinit_succeeded: AtomicBool,
    /// `deinit_plugin` returned `OFFLOAD_IN_USE`: calls are still inside
    /// the plugin (a kernel still running), so its library is never closed.
    deinit_in_use: AtomicBool,
    /// The `requires` flags passed to `init_requires` before `init_device`.
    requires: AtomicI64,
    /// Serialises `load_binary`/`unload_binary` of a plugin written for
    /// LLVM 14's runtime, whose global translation-table lock serialises
    /// every image load (LLVM 14's own plugins keep their images in
    /// unguarded lists); see [`Plugin::legacy_image_guard`].
    legacy_image_lock: Mutex<()>,
    /// `None` once closed. Declared before `liveness`: dropped (closed) first.
    library: Mutex<Option<PluginCode>>,
    /// This runtime's claim on the library; released once it is closed.
    claim: Mutex<Option<claim::Claim>>,
    liveness: Arc<Liveness>,
}

/// A snapshot of one plugin, for [`crate::Runtime::plugins`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The library's file name (e.g. `libomptarget.rtl.x86_64.so`); a
    /// built-in plugin goes by the name of the library it stands in for.
    pub name: String,
    /// The path it was opened from; `<built-in>/NAME` for a built-in one.
    pub path: PathBuf,
    /// Built into this binary (the built-in host plugin), not a library.
    pub built_in: bool,
    /// How many devices it reported.
    pub device_count: usize,
    /// Runtime-wide number of its first device.
    pub first_device: usize,
    /// False once it was destroyed (destruction callback) or closed.
    pub alive: bool,
    /// The optional `__tgt_rtl_*` entries it exports.
    pub optional_entries: Vec<&'static str>,
}

impl Plugin {
    /// The library's file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The path the library was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many devices the plugin reported.
    pub fn device_count(&self) -> usize {
        self.device_count
    }

    /// Runtime-wide number of the plugin's first device; its devices are
    /// `first_device() .. first_device() + device_count()`.
    pub fn first_device(&self) -> usize {
        self.first_device
    }

    /// `__tgt_rtl_is_valid_binary`: can this plugin run `image`? False when
    /// the plugin is gone.
    ///
    /// # Safety
    /// `image` points to a valid `__tgt_device_image`.
    pub unsafe fn is_valid_binary(&self, image: *mut crate::abi::DeviceImage) -> bool {
        // SAFETY: per this function's contract.
        self.call(|e| unsafe { e.is_valid_binary(image) } != 0)
            .unwrap_or(false)
    }

    /// `__tgt_rtl_supports_empty_images() > 0`; false if not exported.
    pub fn supports_empty_images(&self) -> bool {
        // SAFETY: no arguments.
        self.call(|e| unsafe { e.supports_empty_images() }.is_some_and(|yes| yes > 0))
            .unwrap_or(false)
    }

    /// True while the runtime may call into the plugin.
    pub fn is_alive(&self) -> bool {
        self.liveness.callable()
    }

    /// True once the plugin reported its own destruction.
    pub fn was_destroyed(&self) -> bool {
        self.liveness.destroyed()
    }

    /// Call the destruction callback exactly as the plugin would when it is
    /// destroyed before `deinit_plugin`. For tests of the safety net: from
    /// here on the runtime never calls into this plugin again.
    #[doc(hidden)]
    pub fn invoke_destruction_callback(&self) {
        // SAFETY: `liveness` is alive (we hold it).
        unsafe { liveness::on_plugin_destroyed(self.liveness.as_callback_data()) };
    }

    /// A snapshot for diagnostics.
    pub fn info(&self) -> PluginInfo {
        PluginInfo {
            name: self.name.clone(),
            path: self.path.clone(),
            built_in: self.is_native(),
            device_count: self.device_count,
            first_device: self.first_device,
            alive: self.is_alive(),
            optional_entries: self.exported.names(),
        }
    }

    /// `__tgt_rtl_set_info_flag(flags)`, if exported (`__tgt_set_info_flag`
    /// forwards the program's `LIBOMPTARGET_INFO` bits to every plugin).
    pub fn set_info_flag(&self, flags: u32) {
        // SAFETY: plain integer argument.
        let _ = self.call(|e| unsafe { e.set_info_flag(flags) });
    }

    /// `__tgt_rtl_print_device_info(local_device)`; false if not exported
    /// or the plugin is dead.
    pub fn print_device_info(&self, local_device: i32) -> bool {
        // SAFETY: plain integer argument; the plugin checks the range.
        self.call(|e| unsafe { e.print_device_info(local_device) }.is_some())
            .unwrap_or(false)
    }

    /// `__tgt_rtl_get_device_info(local_device, key)`: the property's
    /// bytes (a text's UTF-8, a number's 8 native-endian bytes), `None`
    /// when the plugin does not know it or lacks the entry (LLVM's
    /// plugins).
    ///
    /// # Errors
    /// The plugin is gone ([`Error::PluginDead`]), or the entry failed
    /// ([`Error::PluginCallFailed`], with the plugin's reason).
    pub(crate) fn device_info_bytes(
        &self,
        device: usize,
        local_device: i32,
        key: crate::abi::plugin::DeviceInfoKey,
    ) -> Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; 256];
        // A value that did not fit is asked for again, once, with room for
        // the size the plugin said (up to 1 MiB: no property is larger).
        for _ in 0..2 {
            let mut size = 0usize;
            let cap = buf.len();
            let code = self.call(|e| {
                // SAFETY: `buf` is writable for `cap` bytes, `size` is
                // writable; the plugin checks the device number.
                unsafe {
                    e.get_device_info(
                        local_device,
                        key as i32,
                        buf.as_mut_ptr().cast(),
                        cap,
                        &mut size,
                    )
                }
            })?;
            let Some(code) = code else {
                return Ok(None);
            };
            check_code(self, device, "get_device_info", code)?;
            if size == 0 {
                return Ok(None);
            }
            if size <= cap {
                buf.truncate(size);
                return Ok(Some(buf));
            }
            if size > 1 << 20 {
                break;
            }
            // It did not fit, and nothing was written: again with room.
            buf.resize(size, 0);
        }
        Err(Error::PluginCallFailed {
            plugin: self.name.clone(),
            device,
            entry: "get_device_info",
            code: crate::abi::OFFLOAD_SUCCESS,
            reason: Some(format!("the size of {key:?} kept changing or is too large")),
        })
    }

    /// `__tgt_rtl_init_device_info` (and, with `async_info`,
    /// `__tgt_rtl_init_async_info`) for OpenMP interop objects. `None` if
    /// the plugin does not export them; `Some(false)` if one failed.
    ///
    /// # Safety
    /// `info` and `err` are writable; `async_info`, if given, is writable.
    pub unsafe fn init_interop_info(
        &self,
        local_device: i32,
        info: *mut crate::abi::DeviceInfo,
        err: *mut *const std::ffi::c_char,
        async_info: Option<*mut *mut crate::abi::AsyncInfo>,
    ) -> Option<bool> {
        self.call(|e| {
            // SAFETY: per this function's contract.
            if unsafe { e.init_device_info(local_device, info, err) }? != 0 {
                return Some(false);
            }
            if let Some(out) = async_info {
                // SAFETY: per this function's contract.
                if unsafe { e.init_async_info(local_device, out) }? != 0 {
                    return Some(false);
                }
            }
            Some(true)
        })
        .ok()
        .flatten()
    }

    /// The `requires` flags devices pass to `init_requires` when they
    /// initialise.
    pub fn requires_flags(&self) -> i64 {
        self.requires.load(Ordering::Acquire)
    }

    /// Record the program's `requires` flags (`__tgt_register_requires`).
    pub(crate) fn set_requires_flags(&self, flags: i64) {
        self.requires.store(flags, Ordering::Release);
    }

    /// Held across `load_binary`/`unload_binary` for a plugin without this
    /// project's lifecycle entries (it does not export
    /// `register_destruction_cb`): one written for LLVM 14's runtime, which
    /// may rely on image loads being serialised. Our plugins export it and
    /// make their image entries thread-safe, and get `None`: no lock of
    /// ours may be held across a load that can wait for the dynamic
    /// loader's lock (`docs/lifecycle.md`, "Lock order and the dynamic loader"). A
    /// legacy plugin keeps LLVM 14's deadlock against a library
    /// (un)registering on another thread, rather than a data race.
    pub(crate) fn legacy_image_guard(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        if self
            .entries
            .exports(crate::abi::plugin::OptionalEntry::RegisterDestructionCb)
        {
            return None;
        }
        Some(
            self.legacy_image_lock
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Whether the plugin has the optional `entry` (without calling it).
    #[inline]
    pub(crate) fn exports(&self, entry: crate::abi::plugin::OptionalEntry) -> bool {
        self.exported.has(entry)
    }

    /// The optional entries it has, for a choice made inside [`Plugin::call`].
    #[inline]
    pub(crate) fn exported(&self) -> entry_table::Exported {
        self.exported
    }

    /// Whether the plugin is built into this crate and called natively
    /// ([`crate::abi::plugin::PluginCalls::is_native`]): then a kernel's
    /// thread exit comes back pending instead of unwinding out of the call.
    #[inline]
    pub(crate) fn is_native(&self) -> bool {
        matches!(self.entries, Calls::Native(_))
    }

    /// Run `f` with the plugin's entries if the plugin may still be called.
    ///
    /// The check and the call are not atomic with respect to the plugin
    /// destroying itself on another thread; the destruction callback is a
    /// safety net for teardown order, not a lock.
    #[inline]
    pub(crate) fn call<R>(
        &self,
        f: impl FnOnce(&dyn crate::abi::plugin::PluginCalls) -> R,
    ) -> Result<R> {
        if self.liveness.callable() {
            Ok(f(&*self.entries))
        } else {
            Err(Error::PluginDead {
                plugin: self.name.clone(),
            })
        }
    }

    /// Run a launch entry (`f`) if the plugin may still be called, where a
    /// kernel may end its thread (`pthread_exit`, or a cancellation acted
    /// upon inside it): then `Err(ThreadExiting)`, the exit pending on this
    /// thread (`omptarget_thread_exit`) for the outermost frame to resume.
    ///
    /// The one place that knows how the exit comes back. A library's C
    /// entry resumes it past its own panic boundary, so it unwinds out of
    /// `f`: it is intercepted here, before any frame of ours (a panic
    /// boundary up the stack would abort on it). A built-in plugin's backend
    /// intercepted it already and left it pending: `f` returns normally,
    /// and no second interception is set up (`PluginCalls::is_native`).
    pub(crate) fn launch(
        &self,
        f: impl FnOnce(&dyn crate::abi::plugin::PluginCalls) -> i32,
    ) -> Result<i32> {
        if self.is_native() {
            // Only an exit this call left pending is this launch's: one a
            // Rust caller was told of earlier (`ThreadExiting`) and kept
            // running past is not, and must not fail every later launch
            // of the thread.
            let earlier = omptarget_thread_exit::is_pending();
            let code = self.call(f)?;
            if !earlier && omptarget_thread_exit::is_pending() {
                return Err(Error::ThreadExiting);
            }
            return Ok(code);
        }
        let mut outcome = None;
        if let Err(exit) =
            omptarget_thread_exit::call_intercepting_exit(|| outcome = Some(self.call(f)))
        {
            omptarget_thread_exit::set_pending(exit);
            return Err(Error::ThreadExiting);
        }
        match outcome {
            Some(result) => result,
            // Built only here: `Error` has a destructor, and an eager
            // `unwrap_or(Err(..))` built and dropped one on every launch.
            None => Err(Error::ThreadExiting),
        }
    }

    /// The plugin's message about the calling thread's last failed entry
    /// (`__tgt_rtl_last_error_message`), read once; `None` when the plugin
    /// has no such entry or no message.
    pub(crate) fn take_last_error(&self) -> Option<String> {
        let mut buf = [0u8; 1024];
        let len = self
            // SAFETY: `buf` is writable for its length.
            .call(|e| unsafe { e.last_error_message(buf.as_mut_ptr().cast(), buf.len()) })
            .ok()
            .flatten()?;
        let text = String::from_utf8_lossy(&buf[..len.min(buf.len())]);
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    /// Teardown step 5 (`Runtime::shutdown`): `__tgt_rtl_deinit_plugin`, if exported.
    pub(crate) fn deinit(&self) -> StepOutcome {
        if !self.exports(crate::abi::plugin::OptionalEntry::DeinitPlugin) {
            return StepOutcome::NotExported;
        }
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "deinit_plugin");
        // SAFETY: the entry is valid while the plugin is callable, which
        // `call` checks; it takes no arguments.
        match self.call(|e| unsafe { e.deinit_plugin() }) {
            Err(_) => StepOutcome::PluginDead,
            // Exported (checked above): never `None`.
            Ok(None) => StepOutcome::NotExported,
            Ok(Some(0)) => {
                self.deinit_succeeded.store(true, Ordering::Release);
                StepOutcome::Done
            }
            Ok(Some(crate::abi::OFFLOAD_IN_USE)) => {
                self.deinit_in_use.store(true, Ordering::Release);
                StepOutcome::Failed(
                    self.with_last_error("still in use: its library stays loaded".to_owned()),
                )
            }
            Ok(Some(code)) => {
                StepOutcome::Failed(self.with_last_error(format!("deinit_plugin returned {code}")))
            }
        }
    }

    /// `what`, followed by the plugin's own message if it has one.
    fn with_last_error(&self, what: String) -> String {
        match self.take_last_error() {
            Some(message) => format!("{what} ({message})"),
            None => what,
        }
    }

    /// Teardown step 6 (`Runtime::shutdown`): close the library (dlclose). Safe to call twice.
    pub(crate) fn close(&self) -> StepOutcome {
        let library = self
            .library
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(library) = library else {
            return StepOutcome::Failed("already closed".into());
        };
        self.liveness.mark_closed();
        if self.deinit_in_use.load(Ordering::Acquire) {
            // Unmapping code a kernel may still run would crash it: the
            // library (and this runtime's claim on it) stays for the
            // process, and so does the callback data it may still use.
            std::mem::forget(library);
            std::mem::forget(self.claim.lock().unwrap_or_else(|e| e.into_inner()).take());
            if self.callback_registered {
                std::mem::forget(Arc::clone(&self.liveness));
            }
            return StepOutcome::Failed(
                "not closed: the plugin is still in use; its library stays loaded".into(),
            );
        }
        let deinit_ok = self.deinit_succeeded.load(Ordering::Acquire);
        let mut claim = self.claim.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = library.close(deinit_ok, &mut claim);
        keep_callback_data_if_needed(
            &self.liveness,
            &self.path,
            self.callback_registered && !deinit_ok,
        );
        drop(claim.take());
        outcome
    }
}

/// Where a plugin's code lives while it is loaded.
pub(crate) enum PluginCode {
    /// An opened library, closed by the teardown's last step.
    Library(Library),
    /// A built-in plugin's instance (see [`builtin`]): nothing to close;
    /// "close" gives the instance back for another runtime.
    Builtin,
}

impl PluginCode {
    /// Close the library, or give a built-in instance back. An instance
    /// whose `deinit_plugin` did not succeed still holds plugin state, so
    /// it is never given back: `claim` is then leaked on purpose (the
    /// instance stays retired until the process ends).
    pub(crate) fn close(self, deinit_ok: bool, claim: &mut Option<claim::Claim>) -> StepOutcome {
        match self {
            PluginCode::Library(library) => match library.close() {
                Ok(()) => StepOutcome::Done,
                Err(e) => StepOutcome::Failed(e.to_string()),
            },
            PluginCode::Builtin => {
                if !deinit_ok {
                    std::mem::forget(claim.take());
                    return StepOutcome::Failed(
                        "deinit_plugin did not succeed: the built-in instance is retired, not reused"
                            .into(),
                    );
                }
                StepOutcome::Done
            }
        }
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        // Normally closed by the teardown already; this covers a runtime
        // that failed half-way through construction.
        if self.library.get_mut().map(|l| l.is_some()).unwrap_or(true) {
            let _ = self.close();
        }
    }
}

/// After `dlclose`: if the plugin still holds `liveness`'s address as its
/// callback data (it registered the callback and `deinit_plugin` did not
/// succeed) and the library is still mapped (another handle keeps it), it
/// may still call back, so `liveness` must never be freed: leak one
/// reference on purpose.
fn keep_callback_data_if_needed(liveness: &Arc<Liveness>, path: &Path, may_call_back: bool) {
    if may_call_back && library_still_mapped(path) {
        tracing::warn!(
            plugin = %path.display(),
            "plugin is still mapped after close and may call its destruction \
             callback; keeping the callback data alive for the process"
        );
        std::mem::forget(Arc::clone(liveness));
    }
}

/// True if the loader still has the library at `path` mapped.
fn library_still_mapped(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(cpath) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: RTLD_NOLOAD never loads anything (no constructors run); a
    // non-null handle is a new reference we release at once.
    unsafe {
        let handle = libc::dlopen(cpath.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        if handle.is_null() {
            false
        } else {
            libc::dlclose(handle);
            true
        }
    }
}

/// `Ok` for `OFFLOAD_SUCCESS`, else the typed failure of plugin `entry` on
/// device number `device`: the one place that error is built.
pub(crate) fn check_code(
    plugin: &Plugin,
    device: usize,
    entry: &'static str,
    code: i32,
) -> Result<()> {
    if code == omptarget_abi::OFFLOAD_SUCCESS {
        Ok(())
    } else {
        Err(Error::PluginCallFailed {
            plugin: plugin.name().to_owned(),
            device,
            entry,
            code,
            reason: plugin.take_last_error(),
        })
    }
}
