//! Runtime configuration: explicit fields, or read from the environment.
use std::path::PathBuf;

/// How a [`crate::Runtime`] is built.
#[derive(Debug, Clone)]
pub struct Config {
    /// Plugins to load, in order. `None`: the default plugins found next to
    /// the runtime's own library. Env: `OMPTARGET_PLUGINS` (colon-separated).
    pub plugins: Option<Vec<PathBuf>>,
    /// Memory manager threshold in bytes; 0 disables the manager.
    /// Env: `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`. Default 8 KiB.
    pub memory_manager_threshold: usize,
    /// Debug level. Env: `LIBOMPTARGET_DEBUG`.
    pub debug_level: u32,
}

impl Default for Config {
    fn default() -> Self {
        todo!("H2")
    }
}

impl Config {
    /// The defaults, overridden by the environment.
    pub fn from_env() -> Self {
        todo!("H2")
    }
}
