//! Runtime configuration: explicit fields, or read from the environment.
//!
//! Environment variables (all optional):
//! * `OMPTARGET_PLUGINS`: colon-separated plugin library paths, loaded in
//!   that order instead of the default plugins (and instead of the
//!   built-in host plugin). Empty entries are ignored; an unset or empty
//!   variable means "the defaults".
//! * `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`: largest allocation (bytes) the
//!   per-device memory manager caches; `0` disables it. Default 8 KiB.
//! * `LIBOMPTARGET_DEBUG`: `1` or higher prints debug events to stderr.
//! * `LIBOMPTARGET_PROFILE`: a file the runtime writes a Chrome trace of
//!   its operations to, at shutdown.
//! * `OMPTARGET_LEAK_REPORT`: set and non-empty, allocations record the
//!   return address into the program that made them (for the leak report).
use crate::{Error, Result};
use std::path::PathBuf;

/// Env var naming the plugins to load.
pub const ENV_PLUGINS: &str = "OMPTARGET_PLUGINS";
/// Env var with the memory manager threshold.
pub const ENV_MM_THRESHOLD: &str = "LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD";
/// Env var with the debug level.
pub const ENV_DEBUG: &str = "LIBOMPTARGET_DEBUG";
/// Env var with the profile's file name (LLVM's variable).
pub const ENV_PROFILE: &str = "LIBOMPTARGET_PROFILE";
/// Env var asking for a leak report (read here: its allocations record
/// where they were made; the C shim prints the report).
pub const ENV_LEAK_REPORT: &str = "OMPTARGET_LEAK_REPORT";

/// How a [`crate::Runtime`] is built.
///
/// [`Config::default`] gives the built-in host plugin's devices (4 by
/// default, `OMPTARGET_HOST_DEVICES`) plus any default plugin library found
/// next to the program (a GPU plugin, `libomptarget.rtl.cuda.so`).
///
/// ```
/// use omptarget::{Config, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// assert!(runtime.device_count() >= 1); // the host devices, out of the box
/// runtime.shutdown();
/// # Ok::<(), omptarget::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// Load the host plugin built into this crate first (feature
    /// `builtin-host`, on by default): in-process x86_64 devices with no
    /// file to stage. Default `true`; `false` with `OMPTARGET_PLUGINS` set
    /// or with [`Config::with_plugins`].
    pub builtin_host: bool,
    /// Plugin libraries to load, in order (after the built-in one). `None`:
    /// the default plugins found next to the runtime's own library (the
    /// program, or the shared library this crate is linked into), except
    /// the x86_64 host plugin file when the built-in one is loaded. Env:
    /// `OMPTARGET_PLUGINS` (colon-separated).
    ///
    /// [`crate::Runtime::new`] fails when plugins were asked for (the
    /// built-in one or a list) and none loaded, unless
    /// [`Config::require_a_plugin`] is off.
    pub(crate) plugins: Option<Vec<PathBuf>>,
    /// Fail [`crate::Runtime::new`] when plugins were asked for and none
    /// loaded (default `true`). LLVM's C ABI (`libomptarget.so`) turns it
    /// off: an OpenMP program then runs its regions on the host, and the
    /// skipped plugins are listed in the shutdown report.
    pub require_a_plugin: bool,
    /// Memory manager threshold in bytes; 0 disables the manager.
    /// Env: `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`. Default 8 KiB.
    pub memory_manager_threshold: usize,
    /// Debug level. Env: `LIBOMPTARGET_DEBUG`.
    pub debug_level: u32,
    /// Write a Chrome trace of the runtime's operations to this file at
    /// shutdown (one runtime of a process at a time). Env:
    /// `LIBOMPTARGET_PROFILE`.
    pub profile: Option<PathBuf>,
    /// What each allocation records about where it was made, for
    /// [`crate::ShutdownReport::leaks`]. Default: the Rust caller (free);
    /// with `OMPTARGET_LEAK_REPORT` set, the return address into the
    /// program (what the C shim needs).
    pub alloc_origins: crate::origin::OriginCapture,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            builtin_host: true,
            plugins: None,
            require_a_plugin: true,
            memory_manager_threshold: crate::memory::DEFAULT_THRESHOLD,
            debug_level: 0,
            profile: None,
            alloc_origins: crate::origin::OriginCapture::Caller,
        }
    }
}

impl Config {
    /// The defaults, overridden by the environment. A variable with an
    /// unusable value keeps its default and logs a warning (with
    /// `LIBOMPTARGET_DEBUG` set); use [`Config::try_from_env`] to get the
    /// error instead.
    pub fn from_env() -> Self {
        Self::from_lookup(
            |var| std::env::var(var).ok(),
            |err| {
                tracing::warn!("{err}; using the default");
            },
        )
    }

    /// The defaults, overridden by the environment; an unusable value is an
    /// [`Error::InvalidEnv`].
    pub fn try_from_env() -> Result<Self> {
        let mut first_error = None;
        let config = Self::from_lookup(
            |var| std::env::var(var).ok(),
            |err| {
                first_error.get_or_insert(err);
            },
        );
        match first_error {
            Some(err) => Err(err),
            None => Ok(config),
        }
    }

    /// The plugin libraries to load, in order, if a list was given
    /// ([`Config::with_plugins`], `OMPTARGET_PLUGINS`); `None`: the
    /// default plugins found next to the runtime's library.
    pub fn plugins(&self) -> Option<&[PathBuf]> {
        self.plugins.as_deref()
    }

    /// Use exactly these plugin libraries, in this order (and not the
    /// built-in host plugin: add it back with
    /// [`Config::with_builtin_host`]).
    ///
    /// # Safety
    /// [`crate::Runtime::new`] loads each library (`dlopen`), which runs
    /// its initialisers, and the runtime's shutdown (or its drop) unloads
    /// it, which runs its finalisers; in between the runtime calls its
    /// `__tgt_rtl_*` entries, trusting each to keep LLVM's plugin contract
    /// (docs/plugins.md). The caller vouches that every path names such a
    /// plugin library (this project's, or LLVM's for its release), whose
    /// initialisers and finalisers are sound to run then: the contract of
    /// `libloading::Library::new`, plus the plugin ABI's. The safe ways
    /// load only libraries of the installation or of the environment:
    /// [`Config::default`] the plugins found next to the runtime's own
    /// library, [`Config::from_env`] those `OMPTARGET_PLUGINS` names (the
    /// process's environment is trusted as the dynamic loader trusts
    /// `LD_PRELOAD`).
    ///
    /// ```compile_fail
    /// let _ = omptarget::Config::default().with_plugins(["libx.so"]); // needs `unsafe`
    /// ```
    pub unsafe fn with_plugins<I, P>(mut self, plugins: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.plugins = Some(plugins.into_iter().map(Into::into).collect());
        self.builtin_host = false;
        self
    }

    /// Look for the default plugin libraries next to the runtime's library
    /// (`plugins = None`), besides the built-in host plugin if it is on.
    pub fn with_default_plugins(mut self) -> Self {
        self.plugins = None;
        self
    }

    /// Whether [`crate::Runtime::new`] fails when every plugin asked for
    /// failed to load (default `true`).
    pub fn with_require_a_plugin(mut self, require: bool) -> Self {
        self.require_a_plugin = require;
        self
    }

    /// Set the debug level (`LIBOMPTARGET_DEBUG`'s meaning; 0: off).
    pub fn with_debug_level(mut self, level: u32) -> Self {
        self.debug_level = level;
        self
    }

    /// Load the built-in host plugin (first) or not.
    pub fn with_builtin_host(mut self, builtin_host: bool) -> Self {
        self.builtin_host = builtin_host;
        self
    }

    /// Write a Chrome trace to `path` at shutdown.
    pub fn with_profile(mut self, path: impl Into<PathBuf>) -> Self {
        self.profile = Some(path.into());
        self
    }

    /// What allocations record about where they were made.
    pub fn with_alloc_origins(mut self, capture: crate::origin::OriginCapture) -> Self {
        self.alloc_origins = capture;
        self
    }

    /// Set the memory manager threshold (0 disables the manager).
    pub fn with_memory_manager_threshold(mut self, bytes: usize) -> Self {
        self.memory_manager_threshold = bytes;
        self
    }

    /// Builds the config from a variable lookup; `on_error` hears about each
    /// unusable value (which then keeps its default).
    fn from_lookup(
        lookup: impl Fn(&'static str) -> Option<String>,
        mut on_error: impl FnMut(Error),
    ) -> Self {
        let mut config = Config::default();
        if let Some(value) = lookup(ENV_DEBUG) {
            match parse_debug_level(&value) {
                Ok(level) => config.debug_level = level,
                Err(err) => on_error(err),
            }
        }
        // Install the debug output before anything else can warn.
        crate::trace::install(config.debug_level);
        if let Some(value) = lookup(ENV_PLUGINS) {
            config.plugins = parse_plugin_list(&value);
            if config.plugins.is_some() {
                config.builtin_host = false;
            }
        }
        if let Some(value) = lookup(ENV_MM_THRESHOLD) {
            match value.trim().parse::<usize>() {
                Ok(bytes) => config.memory_manager_threshold = bytes,
                Err(e) => on_error(Error::InvalidEnv {
                    var: ENV_MM_THRESHOLD,
                    value,
                    reason: format!("not a byte count ({e})"),
                }),
            }
        }
        if let Some(value) = lookup(ENV_PROFILE).filter(|v| !v.trim().is_empty()) {
            config.profile = Some(PathBuf::from(value));
        }
        if lookup(ENV_LEAK_REPORT).is_some_and(|v| !v.trim().is_empty() && v.trim() != "0") {
            config.alloc_origins = crate::origin::OriginCapture::ReturnAddress;
        }
        config
    }
}

/// `LIBOMPTARGET_DEBUG`: a non-negative integer, like LLVM's `stoi`.
fn parse_debug_level(value: &str) -> Result<u32> {
    value.trim().parse::<u32>().map_err(|e| Error::InvalidEnv {
        var: ENV_DEBUG,
        value: value.to_owned(),
        reason: format!("not a debug level ({e})"),
    })
}

/// `OMPTARGET_PLUGINS`: colon-separated paths; `None` if there is none.
fn parse_plugin_list(value: &str) -> Option<Vec<PathBuf>> {
    let paths: Vec<PathBuf> = value
        .split(':')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    (!paths.is_empty()).then_some(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config_from(vars: &[(&'static str, &str)]) -> (Config, Vec<Error>) {
        let vars: HashMap<&str, String> = vars.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut errors = Vec::new();
        let config = Config::from_lookup(|k| vars.get(k).cloned(), |e| errors.push(e));
        (config, errors)
    }

    #[test]
    fn defaults_without_environment() {
        let (config, errors) = config_from(&[]);
        assert_eq!(config, Config::default());
        assert_eq!(config.memory_manager_threshold, 8 * 1024);
        assert!(config.plugins.is_none());
        assert!(errors.is_empty());
    }

    #[test]
    fn environment_overrides() {
        let (config, errors) = config_from(&[
            (ENV_PLUGINS, "/a/libx.so::/b/liby.so:"),
            (ENV_MM_THRESHOLD, "0"),
            (ENV_DEBUG, "0"),
        ]);
        assert!(errors.is_empty());
        assert!(!config.builtin_host, "the variable names every plugin");
        assert_eq!(
            config.plugins,
            Some(vec![
                PathBuf::from("/a/libx.so"),
                PathBuf::from("/b/liby.so")
            ])
        );
        assert_eq!(config.memory_manager_threshold, 0);
        let (config, _) = config_from(&[(ENV_PROFILE, "/tmp/p.json"), (ENV_LEAK_REPORT, "1")]);
        assert_eq!(config.profile, Some(PathBuf::from("/tmp/p.json")));
        assert_eq!(
            config.alloc_origins,
            crate::origin::OriginCapture::ReturnAddress
        );
        let (config, _) = config_from(&[(ENV_PROFILE, ""), (ENV_LEAK_REPORT, "0")]);
        assert_eq!(config, Config::default());
    }

    #[test]
    fn empty_plugin_list_means_defaults() {
        let (config, _) = config_from(&[(ENV_PLUGINS, " : ")]);
        assert!(config.plugins.is_none());
        assert!(config.builtin_host);
    }

    #[test]
    fn bad_values_keep_defaults_and_are_reported() {
        let (config, errors) = config_from(&[(ENV_MM_THRESHOLD, "lots"), (ENV_DEBUG, "-1")]);
        assert_eq!(config.memory_manager_threshold, 8 * 1024);
        assert_eq!(config.debug_level, 0);
        assert_eq!(errors.len(), 2);
        assert!(errors
            .iter()
            .any(|e| matches!(e, Error::InvalidEnv { var, .. } if *var == ENV_MM_THRESHOLD)));
    }
}
