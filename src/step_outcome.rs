//! How one teardown step went: a leaf type, shared by the plugin layer
//! (which runs `deinit_plugin` and `dlclose`) and the report (which lists
//! the steps), so neither module imports the other for it.
use std::fmt;

/// How one teardown step went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The step ran and succeeded.
    Done,
    /// The plugin does not export the entry; nothing to call.
    NotExported,
    /// The plugin was destroyed before this step; it was not called.
    PluginDead,
    /// The entry (or dlclose) failed.
    Failed(String),
}

impl StepOutcome {
    /// Done or nothing to do.
    pub fn is_ok(&self) -> bool {
        matches!(self, StepOutcome::Done | StepOutcome::NotExported)
    }
}

impl fmt::Display for StepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepOutcome::Done => f.write_str("ok"),
            StepOutcome::NotExported => f.write_str("not exported by the plugin"),
            StepOutcome::PluginDead => f.write_str("plugin already destroyed, not called"),
            StepOutcome::Failed(why) => write!(f, "FAILED: {why}"),
        }
    }
}
