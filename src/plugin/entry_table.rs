//! The table of a plugin's `__tgt_rtl_*` entry points, resolved once, and
//! [`Calls`]: how the runtime calls a plugin (a library's table, or a
//! built-in plugin's native calls), as one [`PluginCalls`] object.
use crate::abi::plugin::{self as p, names, OptionalEntry, PluginCalls};
use libloading::Library;

/// A loaded plugin's entries: a library's C table, or a built-in
/// instance's native calls (`omptarget_plugin_kit::builtin`). Both are
/// called through [`PluginCalls`] (`Deref`), so every call site is the same.
#[derive(Clone, Copy)]
// One per plugin, made once: boxing the table would add an indirection to
// every call of a library's entry.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Calls {
    /// A library's `__tgt_rtl_*` symbols: C entries, each with the
    /// plugin's own panic boundary and thread-exit interception.
    Table(Entries),
    /// A plugin built into this crate, called from Rust: one panic
    /// boundary (the caller's) and one interception (the backend's).
    #[cfg_attr(not(feature = "builtin-host"), allow(dead_code))]
    Native(&'static dyn PluginCalls),
}

impl std::ops::Deref for Calls {
    type Target = dyn PluginCalls;

    #[inline]
    fn deref(&self) -> &(dyn PluginCalls + 'static) {
        match self {
            Calls::Table(table) => table,
            Calls::Native(calls) => *calls,
        }
    }
}

/// The optional entries a plugin has, asked once when it is loaded: the
/// operations that choose between a blocking and a queued entry test a
/// bit, not a virtual call per choice (`PluginOp::run_and_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exported(u64);

impl Exported {
    /// The optional entries `calls` has.
    pub(crate) fn of(calls: &dyn PluginCalls) -> Self {
        Exported(
            OptionalEntry::ALL
                .into_iter()
                .filter(|entry| calls.exports(*entry))
                .fold(0, |bits, entry| bits | Self::bit(entry)),
        )
    }

    /// Names of the optional entries the plugin has, for diagnostics.
    pub(crate) fn names(self) -> Vec<&'static str> {
        OptionalEntry::ALL
            .into_iter()
            .filter(|entry| self.has(*entry))
            .map(OptionalEntry::name)
            .collect()
    }

    /// Whether the plugin has `entry`.
    #[inline]
    pub(crate) fn has(self, entry: OptionalEntry) -> bool {
        self.0 & Self::bit(entry) != 0
    }

    #[inline]
    fn bit(entry: OptionalEntry) -> u64 {
        // Fewer than 64 optional entries: checked by a test below.
        1 << (entry as u32)
    }
}

/// Every entry of one plugin (the ABI's [`p::EntryTable`]). Valid only
/// while the library is open; the owning [`super::Plugin`] hands them out
/// only while it is callable.
pub(crate) type Entries = p::EntryTable;

/// Look up one symbol as a fn pointer of type `T`.
///
/// # Safety
/// `T` must be the fn pointer type the plugin ABI gives the symbol `name`.
/// The pointer is valid only while `lib` stays open.
unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    // SAFETY: the caller names the right type; copying the fn pointer out of
    // the Symbol drops the borrow, which the caller upholds by hand.
    unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
}

/// Resolving and describing an entry table.
pub(crate) trait EntriesExt: Sized {
    /// Resolve every entry of `lib`. `Err` lists the required entries the
    /// library lacks.
    ///
    /// # Safety
    /// As for [`resolve`].
    unsafe fn resolve(lib: &Library) -> Result<Self, Vec<&'static str>>;
}

impl EntriesExt for Entries {
    unsafe fn resolve(lib: &Library) -> Result<Entries, Vec<&'static str>> {
        // SAFETY: per this function's contract.
        unsafe { resolve(lib) }
    }
}

/// Resolve every entry of `lib`. `Err` lists the required entries the
/// library lacks.
///
/// # Safety
/// `lib` is a plugin library whose `__tgt_rtl_*` symbols have the types of
/// [`crate::abi::plugin`]; the table is valid while `lib` stays open.
unsafe fn resolve(lib: &Library) -> Result<Entries, Vec<&'static str>> {
    let mut missing = Vec::new();
    macro_rules! required {
        ($name:expr) => {{
            // SAFETY: per this function's contract.
            let found = unsafe { symbol(lib, $name) };
            if found.is_none() {
                missing.push($name);
            }
            found
        }};
    }
    macro_rules! optional {
        ($name:expr) => {
            // SAFETY: per this function's contract.
            unsafe { symbol(lib, $name) }
        };
    }
    let number_of_devices = required!(names::NUMBER_OF_DEVICES);
    let is_valid_binary = required!(names::IS_VALID_BINARY);
    let init_device = required!(names::INIT_DEVICE);
    let load_binary = required!(names::LOAD_BINARY);
    let data_alloc = required!(names::DATA_ALLOC);
    let data_submit = required!(names::DATA_SUBMIT);
    let data_retrieve = required!(names::DATA_RETRIEVE);
    let data_delete = required!(names::DATA_DELETE);
    let run_target_region = required!(names::RUN_TARGET_REGION);
    let run_target_team_region = required!(names::RUN_TARGET_TEAM_REGION);
    // All ten present exactly when `missing` is empty.
    let (
        Some(number_of_devices),
        Some(is_valid_binary),
        Some(init_device),
        Some(load_binary),
        Some(data_alloc),
        Some(data_submit),
        Some(data_retrieve),
        Some(data_delete),
        Some(run_target_region),
        Some(run_target_team_region),
    ) = (
        number_of_devices,
        is_valid_binary,
        init_device,
        load_binary,
        data_alloc,
        data_submit,
        data_retrieve,
        data_delete,
        run_target_region,
        run_target_team_region,
    )
    else {
        return Err(missing);
    };
    Ok(Entries {
        number_of_devices,
        is_valid_binary,
        init_device,
        load_binary,
        data_alloc,
        data_submit,
        data_retrieve,
        data_delete,
        run_target_region,
        run_target_team_region,
        is_data_exchangable: optional!(names::IS_DATA_EXCHANGABLE),
        supports_empty_images: optional!(names::SUPPORTS_EMPTY_IMAGES),
        init_requires: optional!(names::INIT_REQUIRES),
        data_submit_async: optional!(names::DATA_SUBMIT_ASYNC),
        data_retrieve_async: optional!(names::DATA_RETRIEVE_ASYNC),
        data_exchange: optional!(names::DATA_EXCHANGE),
        data_exchange_async: optional!(names::DATA_EXCHANGE_ASYNC),
        run_target_region_async: optional!(names::RUN_TARGET_REGION_ASYNC),
        run_target_team_region_async: optional!(names::RUN_TARGET_TEAM_REGION_ASYNC),
        synchronize: optional!(names::SYNCHRONIZE),
        set_info_flag: optional!(names::SET_INFO_FLAG),
        print_device_info: optional!(names::PRINT_DEVICE_INFO),
        create_event: optional!(names::CREATE_EVENT),
        record_event: optional!(names::RECORD_EVENT),
        wait_event: optional!(names::WAIT_EVENT),
        sync_event: optional!(names::SYNC_EVENT),
        destroy_event: optional!(names::DESTROY_EVENT),
        event_elapsed_time: optional!(names::EVENT_ELAPSED_TIME),
        init_async_info: optional!(names::INIT_ASYNC_INFO),
        init_device_info: optional!(names::INIT_DEVICE_INFO),
        init_plugin: optional!(names::INIT_PLUGIN),
        deinit_plugin: optional!(names::DEINIT_PLUGIN),
        deinit_device: optional!(names::DEINIT_DEVICE),
        unload_binary: optional!(names::UNLOAD_BINARY),
        register_destruction_cb: optional!(names::REGISTER_DESTRUCTION_CB),
        last_error: optional!(names::LAST_ERROR_MESSAGE),
        run_typed_region: optional!(names::RUN_TYPED_REGION),
        data_delete_batch: optional!(names::DATA_DELETE_BATCH),
        load_binary_flags: optional!(names::LOAD_BINARY_FLAGS),
        is_device_compatible: optional!(names::IS_DEVICE_COMPATIBLE),
        get_device_info: optional!(names::GET_DEVICE_INFO),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_optional_entry_has_a_bit_of_its_own() {
        let mut seen = 0u64;
        for entry in OptionalEntry::ALL {
            assert!((entry as u32) < 64, "{entry:?}");
            let bit = Exported::bit(entry);
            assert_eq!(seen & bit, 0, "{entry:?} shares a bit");
            seen |= bit;
        }
    }

    /// The set asked once agrees with the plugin's own answer, entry by
    /// entry (the built-in host plugin has some optional entries, not all).
    #[cfg(feature = "builtin-host")]
    #[test]
    fn the_set_agrees_with_the_plugin() {
        let instance = (crate::plugin::builtin::HOST.instance)(0).expect("an instance");
        let exported = Exported::of(instance.calls);
        let mut some = false;
        for entry in OptionalEntry::ALL {
            assert_eq!(
                exported.has(entry),
                instance.calls.exports(entry),
                "{entry:?}"
            );
            some |= exported.has(entry);
        }
        assert!(some);
    }
}
