//! The table of a plugin's `__tgt_rtl_*` entry points, resolved once.
use crate::abi::plugin::{self as p, names};
use libloading::Library;

/// Every entry of one plugin: required ones as plain fn pointers, optional
/// ones as `Option`. Valid only while the library is open; the owning
/// [`super::Plugin`] hands them out only while it is callable.
#[derive(Clone, Copy)]
pub(crate) struct Entries {
    pub number_of_devices: p::NumberOfDevicesFn,
    pub is_valid_binary: p::IsValidBinaryFn,
    pub init_device: p::InitDeviceFn,
    pub load_binary: p::LoadBinaryFn,
    pub data_alloc: p::DataAllocFn,
    pub data_submit: p::DataSubmitFn,
    pub data_retrieve: p::DataRetrieveFn,
    pub data_delete: p::DataDeleteFn,
    pub run_target_region: p::RunTargetRegionFn,
    pub run_target_team_region: p::RunTargetTeamRegionFn,

    pub is_data_exchangable: Option<p::IsDataExchangableFn>,
    pub supports_empty_images: Option<p::SupportsEmptyImagesFn>,
    pub init_requires: Option<p::InitRequiresFn>,
    pub data_submit_async: Option<p::DataSubmitAsyncFn>,
    pub data_retrieve_async: Option<p::DataRetrieveAsyncFn>,
    pub data_exchange: Option<p::DataExchangeFn>,
    pub data_exchange_async: Option<p::DataExchangeAsyncFn>,
    pub run_target_region_async: Option<p::RunTargetRegionAsyncFn>,
    pub run_target_team_region_async: Option<p::RunTargetTeamRegionAsyncFn>,
    pub synchronize: Option<p::SynchronizeFn>,
    pub set_info_flag: Option<p::SetInfoFlagFn>,
    pub print_device_info: Option<p::PrintDeviceInfoFn>,
    pub create_event: Option<p::CreateEventFn>,
    pub record_event: Option<p::RecordEventFn>,
    pub wait_event: Option<p::WaitEventFn>,
    pub sync_event: Option<p::SyncEventFn>,
    pub destroy_event: Option<p::DestroyEventFn>,
    pub init_async_info: Option<p::InitAsyncInfoFn>,
    pub init_device_info: Option<p::InitDeviceInfoFn>,

    pub init_plugin: Option<p::InitPluginFn>,
    pub deinit_plugin: Option<p::DeinitPluginFn>,
    pub deinit_device: Option<p::DeinitDeviceFn>,
    pub unload_binary: Option<p::UnloadBinaryFn>,
    pub register_destruction_cb: Option<p::RegisterDestructionCbFn>,
}

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

impl Entries {
    /// Resolve every entry of `lib`. `Err` lists the required entries the
    /// library lacks.
    ///
    /// # Safety
    /// `lib` is a plugin library whose `__tgt_rtl_*` symbols have the types
    /// of [`crate::abi::plugin`]; the table is valid while `lib` stays open.
    pub unsafe fn resolve(lib: &Library) -> Result<Entries, Vec<&'static str>> {
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
            init_async_info: optional!(names::INIT_ASYNC_INFO),
            init_device_info: optional!(names::INIT_DEVICE_INFO),
            init_plugin: optional!(names::INIT_PLUGIN),
            deinit_plugin: optional!(names::DEINIT_PLUGIN),
            deinit_device: optional!(names::DEINIT_DEVICE),
            unload_binary: optional!(names::UNLOAD_BINARY),
            register_destruction_cb: optional!(names::REGISTER_DESTRUCTION_CB),
        })
    }

    /// Names of the optional entries this plugin exports, for diagnostics.
    pub fn optional_exported(&self) -> Vec<&'static str> {
        let all: [(&'static str, bool); 24] = [
            (
                names::IS_DATA_EXCHANGABLE,
                self.is_data_exchangable.is_some(),
            ),
            (
                names::SUPPORTS_EMPTY_IMAGES,
                self.supports_empty_images.is_some(),
            ),
            (names::INIT_REQUIRES, self.init_requires.is_some()),
            (names::DATA_SUBMIT_ASYNC, self.data_submit_async.is_some()),
            (
                names::DATA_RETRIEVE_ASYNC,
                self.data_retrieve_async.is_some(),
            ),
            (names::DATA_EXCHANGE, self.data_exchange.is_some()),
            (
                names::DATA_EXCHANGE_ASYNC,
                self.data_exchange_async.is_some(),
            ),
            (
                names::RUN_TARGET_REGION_ASYNC,
                self.run_target_region_async.is_some(),
            ),
            (
                names::RUN_TARGET_TEAM_REGION_ASYNC,
                self.run_target_team_region_async.is_some(),
            ),
            (names::SYNCHRONIZE, self.synchronize.is_some()),
            (names::SET_INFO_FLAG, self.set_info_flag.is_some()),
            (names::PRINT_DEVICE_INFO, self.print_device_info.is_some()),
            (names::CREATE_EVENT, self.create_event.is_some()),
            (names::RECORD_EVENT, self.record_event.is_some()),
            (names::WAIT_EVENT, self.wait_event.is_some()),
            (names::SYNC_EVENT, self.sync_event.is_some()),
            (names::DESTROY_EVENT, self.destroy_event.is_some()),
            (names::INIT_ASYNC_INFO, self.init_async_info.is_some()),
            (names::INIT_DEVICE_INFO, self.init_device_info.is_some()),
            (names::INIT_PLUGIN, self.init_plugin.is_some()),
            (names::DEINIT_PLUGIN, self.deinit_plugin.is_some()),
            (names::DEINIT_DEVICE, self.deinit_device.is_some()),
            (names::UNLOAD_BINARY, self.unload_binary.is_some()),
            (
                names::REGISTER_DESTRUCTION_CB,
                self.register_destruction_cb.is_some(),
            ),
        ];
        all.iter()
            .filter(|(_, has)| *has)
            .map(|(n, _)| *n)
            .collect()
    }
}
