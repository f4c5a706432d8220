//! Plugins built into a program: see [`crate::builtin_instances!`].

/// One instance of a built-in plugin.
#[derive(Clone, Copy)]
pub struct Instance {
    /// Its entries, the table a runtime also resolves from a library.
    pub entries: crate::abi::plugin::EntryTable,
    /// A number that identifies this instance's state (its cell's
    /// address): a runtime claims it, so that two runtimes never share it.
    pub key: usize,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
