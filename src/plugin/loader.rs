//! Opening plugin libraries, in this order: dlopen; resolve the entries
//! (no plugin code runs); claim the loaded object (one runtime per plugin
//! library); register the destruction callback; `init_plugin`; count the
//! devices and check the count against the limits below. A plugin that
//! fails any step is skipped with its reason, after undoing what it set up
//! (`deinit_plugin` if `init_plugin` succeeded, then close).
use super::builtin::BuiltinPlugin;
use super::claim::Claim;
use super::entry_table::{Calls, Entries, EntriesExt};
use super::liveness::{on_plugin_destroyed, Liveness};
use super::Plugin;
use super::PluginCode;
use crate::abi::plugin::OptionalEntry;
use crate::step_outcome::StepOutcome;
use libloading::Library;
use scopeguard::ScopeGuard;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, Mutex};

/// Most devices one plugin may have. Far above any real machine; a plugin
/// reporting more is broken or hostile, and is skipped rather than
/// trusted. (A device costs nothing until it is used: `Device`s are built
/// on first use, see `device::table`; the OpenMP layer's per-device slot is
/// made when the plugin is first used.)
pub const MAX_DEVICES_PER_PLUGIN: usize = 1 << 16;
/// Most devices of one runtime, all plugins together (device numbers are C
/// `int`s; this keeps them far inside).
pub const MAX_DEVICES: usize = 1 << 16;

/// Why a plugin was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// `dlopen` failed (missing file, unresolved symbols, wrong ELF class).
    OpenFailed(String),
    /// The library lacks required `__tgt_rtl_*` entries.
    MissingEntries(Vec<&'static str>),
    /// `__tgt_rtl_init_plugin` returned this failure code.
    InitPluginFailed(i32),
    /// `__tgt_rtl_number_of_devices` returned this (0 or less).
    NoDevices(i32),
    /// `__tgt_rtl_number_of_devices` returned more than a plugin may have
    /// ([`MAX_DEVICES_PER_PLUGIN`]), or more than the runtime has room
    /// left for ([`MAX_DEVICES`] in all): `reported` devices, `room` left.
    TooManyDevices {
        /// The device count the plugin reported.
        reported: i32,
        /// The most devices it could have had: the per-plugin limit or the
        /// device numbers the runtime had left, whichever is smaller.
        room: usize,
    },
    /// The plugin called its destruction callback while being loaded.
    DestroyedDuringLoad,
    /// Another live `Runtime` in this process already uses this library
    /// (plugin state is per loaded library, see `plugin::claim`).
    InUseByAnotherRuntime,
    /// Loading unwound part-way (a panic in the runtime); what was set up
    /// was undone on the way out.
    Interrupted,
    /// Every instance of a built-in plugin (this many) is used by another
    /// live `Runtime` of this process.
    AllInstancesInUse(usize),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::OpenFailed(e) => write!(f, "cannot open: {e}"),
            SkipReason::MissingEntries(names) => {
                write!(f, "missing required entries: {}", names.join(", "))
            }
            SkipReason::InitPluginFailed(code) => write!(f, "init_plugin failed with {code}"),
            SkipReason::NoDevices(n) => write!(f, "reports {n} devices"),
            SkipReason::TooManyDevices { reported, room } => write!(
                f,
                "reports {reported} devices, more than the {room} this runtime can still number (at most {MAX_DEVICES_PER_PLUGIN} per plugin, {MAX_DEVICES} in all)"
            ),
            SkipReason::DestroyedDuringLoad => write!(f, "destroyed itself while loading"),
            SkipReason::Interrupted => write!(f, "loading was interrupted"),
            SkipReason::AllInstancesInUse(n) => write!(
                f,
                "all {n} instances are used by other live runtimes of this process (shut one down first)"
            ),
            SkipReason::InUseByAnotherRuntime => write!(
                f,
                "already used by another runtime in this process (plugins keep process-wide state; load a copy of the file to use it twice)"
            ),
        }
    }
}

/// A plugin that was not used, and how its partial setup was undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPlugin {
    /// Path of the plugin library that was skipped.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: SkipReason,
    /// The undo steps that ran, in order: `("deinit_plugin", outcome)`,
    /// `("close", outcome)`.
    pub undone: Vec<(&'static str, StepOutcome)>,
}

impl fmt::Display for SkippedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)?;
        for (step, outcome) in &self.undone {
            write!(f, "; {step}: {outcome}")?;
        }
        Ok(())
    }
}

/// Where a plugin's code comes from.
#[derive(Debug, Clone)]
pub(crate) enum PluginSource {
    /// A library file, opened with `dlopen`.
    Library(PathBuf),
    /// A plugin built into this crate (one of its free instances).
    #[cfg_attr(not(feature = "builtin-host"), allow(dead_code))]
    Builtin(BuiltinPlugin),
}

impl PluginSource {
    /// The path reports show: the file, or `<built-in>/NAME`.
    fn path(&self) -> PathBuf {
        match self {
            PluginSource::Library(path) => path.clone(),
            PluginSource::Builtin(builtin) => Path::new("<built-in>").join(builtin.name),
        }
    }
}

/// Load every plugin of `sources`, in order; the loaded ones get
/// consecutive device numbers starting at 0.
pub(crate) fn load_all(sources: &[PluginSource]) -> (Vec<Arc<Plugin>>, Vec<SkippedPlugin>) {
    let mut loaded = Vec::new();
    let mut skipped = Vec::new();
    let mut next_device = 0;
    for source in sources {
        let path = source.path();
        let loading = {
            let _span = crate::profile::span(crate::profile::Kind::Registration, "load plugin");
            load(source, next_device, device_room(next_device))
        };
        match loading {
            Ok(plugin) => {
                tracing::debug!(
                    plugin = %plugin.name,
                    devices = plugin.device_count,
                    first_device = next_device,
                    "loaded plugin"
                );
                next_device += plugin.device_count;
                loaded.push(Arc::new(plugin));
            }
            Err(skip) => {
                tracing::warn!(plugin = %path.display(), "skipping plugin: {}", skip);
                if matches!(skip.reason, SkipReason::TooManyDevices { .. }) {
                    // A broken plugin the user should hear of even without
                    // debug output: LLVM 14 would abort on it.
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "Libomptarget warning: skipping plugin {skip}"
                    );
                }
                skipped.push(skip);
            }
        }
    }
    (loaded, skipped)
}

/// How many devices the next plugin may have when `used` are numbered.
fn device_room(used: usize) -> usize {
    MAX_DEVICES_PER_PLUGIN.min(MAX_DEVICES.saturating_sub(used))
}

/// What has been set up so far; undone in reverse unless disarmed.
struct Partial {
    path: PathBuf,
    library: Option<PluginCode>,
    liveness: Arc<Liveness>,
    callback_registered: bool,
    /// The plugin's entries, once it is known to have the required ones.
    calls: Option<Calls>,
    /// Set once `init_plugin` succeeded: undo calls `deinit_plugin`.
    deinit: bool,
    /// Released when this is dropped, after the undo closed the library.
    claim: Option<Claim>,
}

impl Partial {
    /// Undo: `deinit_plugin` if `init_plugin` succeeded, then close.
    fn undo(mut self, reason: SkipReason) -> SkippedPlugin {
        let mut undone = Vec::new();
        if let Some(calls) = self.calls.as_ref().filter(|_| self.deinit) {
            self.deinit = false;
            let outcome = if self.liveness.callable() {
                // SAFETY: the library is open and the plugin alive.
                match unsafe { calls.deinit_plugin() } {
                    Some(0) => StepOutcome::Done,
                    None => StepOutcome::NotExported,
                    Some(code) => StepOutcome::Failed(format!("returned {code}")),
                }
            } else {
                StepOutcome::PluginDead
            };
            undone.push(("deinit_plugin", outcome));
        }
        if let Some(library) = self.library.take() {
            self.liveness.mark_closed();
            let deinit_ok =
                !matches!(undone.first(), Some(("deinit_plugin", o)) if *o != StepOutcome::Done);
            let outcome = library.close(deinit_ok, &mut self.claim);
            undone.push(("close", outcome));
            // `deinit_plugin` success means the plugin forgot the callback.
            let deinit_ok = matches!(undone.first(), Some(("deinit_plugin", StepOutcome::Done)));
            super::keep_callback_data_if_needed(
                &self.liveness,
                &self.path,
                self.callback_registered && !deinit_ok,
            );
        }
        SkippedPlugin {
            path: self.path.clone(),
            reason,
            undone,
        }
    }
}

/// Load one plugin; its devices will be numbered from `first_device`, and
/// it may have at most `room` of them.
fn load(source: &PluginSource, first_device: usize, room: usize) -> Result<Plugin, SkippedPlugin> {
    let path = source.path();
    let skip_unopened = |reason| SkippedPlugin {
        path: path.clone(),
        reason,
        undone: Vec::new(),
    };
    let (code, entries, claim) = match source {
        PluginSource::Library(file) => open_library(file).map_err(skip_unopened)?,
        PluginSource::Builtin(builtin) => claim_builtin(builtin).map_err(skip_unopened)?,
    };

    // Undo on every way out: the error paths below undo explicitly (to
    // record the reason); the guard covers an unwind in between.
    let mut partial = scopeguard::guard(
        Partial {
            path: path.clone(),
            library: Some(code),
            liveness: Arc::new(Liveness::default()),
            callback_registered: false,
            calls: None,
            deinit: false,
            claim,
        },
        |interrupted| {
            let skipped = interrupted.undo(SkipReason::Interrupted);
            tracing::warn!(plugin = %skipped.path.display(), "{skipped}");
        },
    );
    match entries {
        Ok(entries) => partial.calls = Some(entries),
        Err(missing) => {
            return Err(ScopeGuard::into_inner(partial).undo(SkipReason::MissingEntries(missing)))
        }
    };
    // Before the first plugin entry runs: the library may be another live
    // runtime's, whose callback registration and state we must not touch.
    if partial.claim.is_none() {
        let reason = match source {
            PluginSource::Library(_) => SkipReason::InUseByAnotherRuntime,
            PluginSource::Builtin(builtin) => SkipReason::AllInstancesInUse(builtin.instances),
        };
        return Err(ScopeGuard::into_inner(partial).undo(reason));
    }
    let calls = partial.calls.expect("set above");

    // Register the safety net first, before any other entry runs.
    // SAFETY: `data` stays valid while the plugin can call back (see
    // `liveness`); the callback only stores an atomic.
    let registered = unsafe {
        calls.register_destruction_cb(
            Some(on_plugin_destroyed),
            partial.liveness.as_callback_data(),
        )
    };
    partial.callback_registered = registered.is_some();

    if calls.exports(OptionalEntry::InitPlugin) {
        if !partial.liveness.callable() {
            return Err(ScopeGuard::into_inner(partial).undo(SkipReason::DestroyedDuringLoad));
        }
        // SAFETY: first plugin entry called after registration; no args.
        let code = unsafe { calls.init_plugin() }.unwrap_or(0);
        if code != 0 {
            return Err(ScopeGuard::into_inner(partial).undo(SkipReason::InitPluginFailed(code)));
        }
        partial.deinit = calls.exports(OptionalEntry::DeinitPlugin);
    }

    if !partial.liveness.callable() {
        return Err(ScopeGuard::into_inner(partial).undo(SkipReason::DestroyedDuringLoad));
    }
    // SAFETY: no arguments; the plugin is initialised.
    let devices = unsafe { calls.number_of_devices() };
    if devices <= 0 {
        return Err(ScopeGuard::into_inner(partial).undo(SkipReason::NoDevices(devices)));
    }
    // Before anything is allocated per device (LLVM 14 resizes its device
    // table to the count and aborts on 2^30).
    if devices as usize > room {
        let reason = SkipReason::TooManyDevices {
            reported: devices,
            room,
        };
        return Err(ScopeGuard::into_inner(partial).undo(reason));
    }

    let name = match source {
        PluginSource::Builtin(builtin) => builtin.name.to_owned(),
        PluginSource::Library(_) => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string()),
    };
    let mut partial = ScopeGuard::into_inner(partial);
    let library = partial.library.take();
    let entries = partial.calls.take().expect("set above");
    let exported = super::entry_table::Exported::of(&*entries);
    Ok(Plugin {
        name,
        path,
        entries,
        exported,
        device_count: devices as usize,
        first_device,
        callback_registered: partial.callback_registered,
        deinit_succeeded: AtomicBool::new(false),
        deinit_in_use: AtomicBool::new(false),
        requires: AtomicI64::new(crate::abi::requires::UNDEFINED),
        legacy_image_lock: Mutex::new(()),
        library: Mutex::new(library),
        claim: Mutex::new(partial.claim.take()),
        liveness: partial.liveness,
    })
}

/// What [`load`] starts from: the code (kept open), its entries or the
/// required ones it lacks, and this runtime's claim on its state (`None`:
/// another runtime holds it).
type Opened = (PluginCode, Result<Calls, Vec<&'static str>>, Option<Claim>);

/// `dlopen` a plugin library, resolve its entries and claim it.
fn open_library(path: &Path) -> Result<Opened, SkipReason> {
    // SAFETY: opening a library runs its constructors; plugins are trusted
    // code by definition (like LLVM's runtime, which does the same).
    let library = unsafe {
        libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL)
    }
    .map_err(|e| SkipReason::OpenFailed(e.to_string()))?;
    // The handle identifies the loaded object (the same for every dlopen of it).
    let handle = library.into_raw();
    // SAFETY: a handle `into_raw` just returned.
    let library: Library = unsafe { libloading::os::unix::Library::from_raw(handle) }.into();
    // Resolving runs no plugin code; a library without the entries is no
    // plugin, so it is not claimed either.
    // SAFETY: the library is a plugin; the table lives in the Plugin, next
    // to the library, and is not used after close.
    let entries = unsafe { Entries::resolve(&library) };
    let claim = match entries {
        Ok(_) => Claim::take(handle as usize),
        Err(_) => None,
    };
    Ok((
        PluginCode::Library(library),
        entries.map(Calls::Table),
        claim,
    ))
}

/// Claim a free instance of a built-in plugin.
fn claim_builtin(builtin: &BuiltinPlugin) -> Result<Opened, SkipReason> {
    // The runtime returns every failure of a built-in plugin, with the
    // plugin's message, as an error value: no second copy on stderr.
    omptarget_plugin_kit::diagnostics::errors_are_returned();
    for index in 0..builtin.instances {
        let Some(instance) = (builtin.instance)(index) else {
            break;
        };
        if let Some(claim) = Claim::take(instance.key) {
            return Ok((
                PluginCode::Builtin,
                Ok(Calls::Native(instance.calls)),
                Some(claim),
            ));
        }
    }
    Err(SkipReason::AllInstancesInUse(builtin.instances))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_skipped_with_the_loader_message() {
        let (loaded, skipped) = load_all(&[PluginSource::Library(PathBuf::from(
            "/nonexistent/libomptarget.rtl.x.so",
        ))]);
        assert!(loaded.is_empty());
        assert_eq!(skipped.len(), 1);
        let SkipReason::OpenFailed(msg) = &skipped[0].reason else {
            panic!("{:?}", skipped[0]);
        };
        assert!(msg.contains("No such file"), "{msg}");
        assert!(skipped[0].undone.is_empty());
    }

    #[test]
    fn library_without_entries_is_skipped_and_closed() {
        // libc is a shared library without any __tgt_rtl_ entry.
        let (loaded, skipped) = load_all(&[PluginSource::Library(PathBuf::from("libc.so.6"))]);
        assert!(loaded.is_empty());
        let SkipReason::MissingEntries(missing) = &skipped[0].reason else {
            panic!("{:?}", skipped[0]);
        };
        assert_eq!(missing.len(), crate::abi::plugin::names::REQUIRED.len());
        assert_eq!(skipped[0].undone, vec![("close", StepOutcome::Done)]);
    }
}
