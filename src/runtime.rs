//! The runtime value: owns plugins and devices, tears them down in order.
use crate::device::table::DeviceTable;
use crate::plugin::loader::PluginSource;
use crate::plugin::{discovery, loader, Plugin, PluginInfo, SkippedPlugin};
use crate::shutdown_report::{ShutdownReport, TeardownStep};
use crate::{Config, Device, Error, Result};
use std::sync::Arc;

/// An OpenMP offload runtime: its plugins, their devices and everything the
/// devices hold.
///
/// Built by [`Runtime::new`], torn down by [`Runtime::shutdown`] in one
/// fixed order (see DESIGN.md, "Teardown order"): (1) drain every memory manager, (2) free
/// what the user still holds, (3) unload images (running their destructors), (4) `deinit_device`,
/// (5) `deinit_plugin`, (6) close the libraries. Dropping a runtime without
/// `shutdown` runs the same teardown and logs a warning.
///
/// `Send + Sync`: devices are internally synchronised, so one runtime can be
/// shared across threads (e.g. in an `Arc`).
pub struct Runtime {
    config: Config,
    /// In load order; devices hold clones, the teardown closes them.
    plugins: Vec<Arc<Plugin>>,
    /// Global device numbers, in plugin order; each built on first use.
    devices: DeviceTable,
    skipped: Vec<SkippedPlugin>,
    torn_down: bool,
    /// This runtime started the profile recording (`Config::profile`) and
    /// writes it at the end of its teardown.
    profiling: bool,
}

// The C shim shares one runtime across threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
};

impl Runtime {
    /// Load the plugins and enumerate their devices: the built-in host
    /// plugin (unless `config.builtin_host` is off), then `config.plugins`
    /// or the default ones next to the runtime's library. Plugins that fail
    /// to load are skipped and listed in [`Runtime::skipped_plugins`];
    /// devices are initialised lazily, on first use.
    ///
    /// # Errors
    /// [`Error::NoPluginLoaded`], listing every plugin tried and why, when
    /// plugins were asked for (the built-in one, or a list) and none
    /// loaded. Finding no default plugin next to the runtime's library is
    /// not an error (the runtime then has no device, like LLVM's).
    pub fn new(config: Config) -> Result<Runtime> {
        crate::trace::install(config.debug_level);
        // Before the plugins load, so that their loading is recorded too.
        // One runtime of the process records at a time; it writes the file.
        let profiling = match &config.profile {
            Some(path) if crate::profile::start() => {
                tracing::debug!(path = %path.display(), "recording a profile");
                true
            }
            Some(path) => {
                eprintln!(
                    "omptarget warning: not recording a profile into {}: another runtime of this process is recording one",
                    path.display()
                );
                false
            }
            None => false,
        };
        let runtime = Self::load(config, profiling);
        if runtime.is_err() && profiling {
            crate::profile::discard();
        }
        runtime
    }

    /// [`Runtime::new`] after the profile's start.
    fn load(config: Config, profiling: bool) -> Result<Runtime> {
        let mut sources = Vec::new();
        if config.builtin_host {
            sources.push(builtin_host()?);
        }
        match &config.plugins {
            Some(paths) => sources.extend(paths.iter().cloned().map(PluginSource::Library)),
            None => {
                let dir = discovery::runtime_library_dir()?;
                tracing::debug!(dir = %dir.display(), "looking for the default plugins");
                let found = discovery::default_plugins_in(&dir)
                    .into_iter()
                    .filter(|path| {
                        // The built-in host plugin replaces the library.
                        !(config.builtin_host
                            && path.file_name() == Some(discovery::HOST_PLUGIN_NAME.as_ref()))
                    });
                sources.extend(found.map(PluginSource::Library));
            }
        }
        // An empty list asks for no plugin (the shim's `OMP_TARGET_OFFLOAD=DISABLED`).
        let asked_for = config.require_a_plugin
            && (config.builtin_host
                || config.plugins.as_ref().is_some_and(|list| !list.is_empty()));
        let (plugins, skipped) = loader::load_all(&sources);
        if asked_for && plugins.is_empty() {
            return Err(Error::NoPluginLoaded { tried: skipped });
        }
        let devices = DeviceTable::new(&plugins, config.memory_manager_threshold)
            .with_alloc_origins(config.alloc_origins);
        tracing::debug!(
            plugins = plugins.len(),
            skipped = skipped.len(),
            devices = devices.len(),
            "runtime ready"
        );
        Ok(Runtime {
            config,
            plugins,
            devices,
            skipped,
            torn_down: false,
            profiling,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every device, in device-number order. Each is built (not
    /// initialised) as the iteration reaches it: a device costs memory only
    /// once something asks for it.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        (0..self.devices.len()).filter_map(|id| self.devices.get(id))
    }

    /// The device numbered `id`.
    pub fn device(&self, id: usize) -> Result<&Device> {
        // A match, not `ok_or`: that built the error (and dropped it, a call
        // of ~24 instructions) on every successful lookup.
        match self.devices.get(id) {
            Some(device) => Ok(device),
            None => Err(Error::InvalidDevice(id as i64)),
        }
    }

    /// How many devices were asked for so far (the others cost nothing).
    pub fn devices_in_use(&self) -> usize {
        self.devices.built_count()
    }

    /// The number of devices.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The loaded plugins, in load order.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.plugins.iter().map(|p| p.info()).collect()
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The loaded plugin at `index` (load order), for the OpenMP layer's
    /// per-plugin questions (`is_valid_binary`, `supports_empty_images`).
    pub fn plugin(&self, index: usize) -> Option<&Plugin> {
        self.plugins.get(index).map(|p| &**p)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The number of loaded plugins.
    pub fn plugin_count(&self) -> usize {
        self.plugins.len()
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Device `local` (the plugin's own number) of the plugin at `index`.
    #[inline]
    pub fn plugin_device(&self, index: usize, local: usize) -> Option<&Device> {
        self.devices.plugin_device(index, local)
    }

    /// The plugins that were not loaded, with the reasons.
    pub fn skipped_plugins(&self) -> &[SkippedPlugin] {
        &self.skipped
    }

    /// Tear everything down in the fixed order and say what happened.
    ///
    /// Every handle borrowing the runtime must be gone first: the compiler
    /// enforces it (see [`crate::DeviceBuffer`]).
    pub fn shutdown(mut self) -> ShutdownReport {
        self.teardown(false)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The teardown at process exit while calls are still in flight (`why`
    /// says which): only what no call can be using is released, the cached
    /// blocks of the memory managers (step 1). Everything else stays as it
    /// is and is reported as left to the OS: a running kernel may use its
    /// memory, images and plugin, and a thread that left a call by `exit`
    /// or `longjmp` may hold the locks its teardown would need. The runtime
    /// stays usable; a later [`Runtime::shutdown`] finishes the teardown.
    pub fn release_unused_at_exit(&self, why: &str) -> ShutdownReport {
        let mut report = ShutdownReport::default();
        for device in self.devices.built() {
            device.teardown_drain_memory_manager(&mut report);
        }
        for device in self.devices.built() {
            device.teardown_list_in_use(&mut report);
        }
        for device in self.devices.built() {
            device.teardown_list_images_kept(&mut report, why);
        }
        for plugin in &self.plugins {
            report.not_freed.push(crate::shutdown_report::NotFreed {
                device: None,
                plugin: plugin.name().to_owned(),
                what: "the plugin, its devices and images (not deinitialised, not closed)"
                    .to_owned(),
                reason: format!("in use at exit: {why}"),
            });
        }
        report.left_to_os = Some(why.to_owned());
        tracing::debug!("partial teardown at exit:\n{report}");
        self.write_profile();
        report
    }

    /// Write the profile this runtime recorded, if it recorded one.
    fn write_profile(&self) {
        let Some(path) = self.config.profile.as_ref().filter(|_| self.profiling) else {
            return;
        };
        match crate::profile::finish(path) {
            Ok(Some(events)) => {
                tracing::debug!(path = %path.display(), events, "profile written")
            }
            Ok(None) => {}
            Err(err) => eprintln!(
                "omptarget error: cannot write the profile to {}: {err}",
                path.display()
            ),
        }
    }

    fn teardown(&mut self, from_drop: bool) -> ShutdownReport {
        self.torn_down = true;
        let mut report = ShutdownReport {
            from_drop,
            skipped_plugins: self.skipped.clone(),
            ..Default::default()
        };
        use crate::profile::{span, Kind::Teardown};
        {
            let _step = span(Teardown, "drain memory managers");
            for device in self.devices.built() {
                device.teardown_forgotten_queues(&mut report);
                device.teardown_drain_memory_manager(&mut report);
            }
        }
        {
            let _step = span(Teardown, "free user allocations");
            for device in self.devices.built() {
                device.teardown_free_user_allocations(&mut report);
            }
        }
        {
            let _step = span(Teardown, "unload images");
            for device in self.devices.built() {
                device.teardown_unload_images(&mut report);
            }
        }
        {
            let _step = span(Teardown, "deinit devices");
            for device in self.devices.built() {
                device.teardown_deinit(&mut report);
            }
        }
        {
            let _step = span(Teardown, "deinit plugins");
            for plugin in &self.plugins {
                report.push(TeardownStep::DeinitPlugin {
                    plugin: plugin.name().to_owned(),
                    outcome: plugin.deinit(),
                });
            }
        }
        {
            let _step = span(Teardown, "close plugins");
            for plugin in &self.plugins {
                report.push(TeardownStep::ClosePlugin {
                    plugin: plugin.name().to_owned(),
                    outcome: plugin.close(),
                });
            }
        }
        // Image storage may be used by a plugin until it is closed.
        for device in self.devices.built() {
            device.release_image_storage();
        }
        if !from_drop {
            tracing::debug!("shutdown complete:\n{report}");
        }
        self.write_profile();
        report
    }
}

/// The built-in host plugin, or why this build has none.
fn builtin_host() -> Result<PluginSource> {
    #[cfg(feature = "builtin-host")]
    {
        Ok(PluginSource::Builtin(crate::plugin::builtin::HOST))
    }
    #[cfg(not(feature = "builtin-host"))]
    {
        Err(Error::InvalidArgument(
            "Config::builtin_host is set, but omptarget was built without its feature `builtin-host`".into(),
        ))
    }
}

impl Drop for Runtime {
    /// Tears the runtime down as [`Runtime::shutdown`] does, and says so
    /// once on stderr (no variable needed): a program that drops its
    /// runtime never sees the report, so it hears of leaks here.
    fn drop(&mut self) {
        if !self.torn_down {
            let report = self.teardown(true);
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "omptarget warning: a Runtime was dropped without shutdown(); it was torn down: {} (Runtime::shutdown returns the full report)",
                report.summary()
            );
            tracing::debug!("teardown from drop:\n{report}");
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field(
                "plugins",
                &self.plugins.iter().map(|p| p.name()).collect::<Vec<_>>(),
            )
            .field("devices", &self.devices.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::SkipReason;
    use std::path::PathBuf;

    /// Plugins skipped at load have no teardown steps; the report still
    /// names each one, why it was skipped and what was undone.
    #[test]
    fn the_shutdown_report_lists_the_skipped_plugins() {
        let missing = PathBuf::from("/nonexistent/libomptarget.rtl.none.so");
        // A shared library without any __tgt_rtl_ entry: opened, closed.
        let no_entries = PathBuf::from("libc.so.6");
        // SAFETY: a missing file and libc (no __tgt_rtl_ entry): opened, closed.
        let config =
            unsafe { Config::default().with_plugins([missing.clone(), no_entries.clone()]) };
        let Err(Error::NoPluginLoaded { tried }) = Runtime::new(config.clone()) else {
            panic!("no plugin loaded, yet Runtime::new succeeded");
        };
        assert_eq!(tried.len(), 2);
        // With the built-in host plugin beside them, the runtime is built
        // and its report lists the two that failed.
        let runtime = Runtime::new(config.with_builtin_host(true)).unwrap();
        let report = runtime.shutdown();
        // The built-in plugin's deinit and close; no device was used.
        assert_eq!(report.steps.len(), 2, "{report}");
        let skipped = &report.skipped_plugins;
        assert_eq!(skipped.len(), 2, "{report}");
        assert_eq!(skipped[0].path, missing);
        assert!(matches!(skipped[0].reason, SkipReason::OpenFailed(_)));
        assert_eq!(skipped[1].path, no_entries);
        assert!(matches!(skipped[1].reason, SkipReason::MissingEntries(_)));
        assert_eq!(
            skipped[1].undone,
            [("close", crate::shutdown_report::StepOutcome::Done)]
        );
        assert!(report.is_clean(), "{report}");

        let text = report.to_string();
        assert!(
            text.starts_with("omptarget shutdown: 2 steps, 0 blocks / 0 bytes freed, 2 plugins skipped at load\n"),
            "{text}"
        );
        assert!(
            text.contains("/nonexistent/libomptarget.rtl.none.so: cannot open: "),
            "{text}"
        );
        assert!(
            text.contains("libc.so.6: missing required entries: __tgt_rtl_"),
            "{text}"
        );
        assert!(text.contains("; close: ok\n"), "{text}");
    }
}
