//! [`export_plugin!`]: export every C entry for a backend type.

/// Export every `__tgt_rtl_*` entry of a plugin for the backend type given.
///
/// Invoke it once, at the root of a cdylib crate:
/// `omptarget_plugin_kit::export_plugin!(MyBackend);`. It declares
///
/// * the plugin state: a `static` [`PluginCell`](crate::PluginCell) (no
///   destructor);
/// * the required LLVM 14 entries (`number_of_devices`, `is_valid_binary`,
///   `init_device`, `load_binary`, `data_alloc`, `data_submit`,
///   `data_retrieve`, `data_delete`, `run_target_region`,
///   `run_target_team_region`);
/// * the optional ones: `init_requires`, `is_data_exchangable`,
///   `data_exchange`, the `_async` variants (on the caller's queue; each
///   blocking entry is the same operation on a local queue, synchronised),
///   `synchronize`, `set_info_flag`, `print_device_info`;
/// * this project's lifecycle entries: `init_plugin`, `deinit_plugin`,
///   `deinit_device`, `unload_binary`, `register_destruction_cb`;
/// * this project's other entries: `last_error_message`,
///   `run_typed_region`, `data_delete_batch`, `load_binary_flags`,
///   `get_device_info`;
/// * the [safety net](crate::safety_net): one `.fini_array` function;
/// * the [fork handlers](crate::fork), registered at initialisation.
///
/// Every entry's signature is checked at compile time against the
/// function-pointer types of `omptarget_abi::plugin`.
#[macro_export]
macro_rules! export_plugin {
    ($backend:ty) => {
        /// The plugin state (see `omptarget_plugin_kit::PluginCell`).
        static __OMPTARGET_PLUGIN: $crate::PluginCell<$backend> =
            $crate::PluginCell::with_fork_handlers(
                __omptarget_fork_prepare,
                __omptarget_fork_release,
            );

        /// `pthread_atfork` handlers (see `omptarget_plugin_kit::fork`).
        extern "C" fn __omptarget_fork_prepare() {
            let _ = ::std::panic::catch_unwind(|| $crate::fork::prepare(&__OMPTARGET_PLUGIN));
        }
        extern "C" fn __omptarget_fork_release() {
            let _ = ::std::panic::catch_unwind($crate::fork::release);
        }

        $crate::__export_entries!(__OMPTARGET_PLUGIN, #[no_mangle]);

        /// The safety net (see `omptarget_plugin_kit::safety_net`): run by
        /// the loader on dlclose or process exit.
        #[used]
        #[link_section = ".fini_array"]
        static __OMPTARGET_SAFETY_NET: extern "C" fn() = {
            extern "C" fn omptarget_safety_net() {
                $crate::safety_net::run(&__OMPTARGET_PLUGIN)
            }
            omptarget_safety_net
        };
    };
}

/// The entries of [`export_plugin!`]; not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_entries {
    ($cell:ident $(, #[$attr:meta])*) => {
        $crate::__export_required!($cell $(, #[$attr])*);
        $crate::__export_optional!($cell $(, #[$attr])*);
        $crate::__export_lifecycle!($cell $(, #[$attr])*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_required {
    ($cell:ident $(, #[$attr:meta])*) => {
        /// `__tgt_rtl_number_of_devices`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_number_of_devices() -> i32 {
            $crate::entry_bodies::number_of_devices(&$cell)
        }

        /// `__tgt_rtl_is_valid_binary`.
        ///
        /// # Safety
        /// `image` is null or a valid `__tgt_device_image`.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_is_valid_binary(
            image: *mut $crate::abi::DeviceImage,
        ) -> i32 {
            // SAFETY: `image` is null or a valid `__tgt_device_image` (this
            // entry's contract, forwarded), as `is_valid_binary` requires.
            unsafe { $crate::entry_bodies::is_valid_binary(&$cell, image) }
        }

        /// `__tgt_rtl_init_device`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_init_device(device: i32) -> i32 {
            $crate::entry_bodies::init_device(&$cell, device)
        }

        /// `__tgt_rtl_load_binary`: the table stays owned by the plugin,
        /// valid until the image is unloaded or its device deinitialised.
        ///
        /// # Safety
        /// `image` is null or a valid `__tgt_device_image`.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_load_binary(
            device: i32,
            image: *mut $crate::abi::DeviceImage,
        ) -> *mut $crate::abi::TargetTable {
            // SAFETY: `image` is null or a valid `__tgt_device_image` (this
            // entry's contract, forwarded), as `load_binary` requires.
            unsafe { $crate::entry_bodies::load_binary(&$cell, device, image) }
        }

        /// `__tgt_rtl_load_binary_flags` (this project's entry):
        /// `__tgt_rtl_load_binary` with `load_flags` (`BIND_NOW`: every
        /// symbol bound at load, or the image is refused).
        ///
        /// # Safety
        /// `image` is null or a valid `__tgt_device_image`.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_load_binary_flags(
            device: i32,
            image: *mut $crate::abi::DeviceImage,
            flags: u32,
        ) -> *mut $crate::abi::TargetTable {
            // SAFETY: `image` is null or a valid `__tgt_device_image` (this
            // entry's contract, forwarded), as `load_binary_flags` requires.
            unsafe { $crate::entry_bodies::load_binary_flags(&$cell, device, image, flags) }
        }

        /// `__tgt_rtl_is_device_compatible` (this project's entry): 1 when
        /// `device` can run `image`, which `is_valid_binary` accepted.
        ///
        /// # Safety
        /// `image` is null or a valid `__tgt_device_image`.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_is_device_compatible(
            device: i32,
            image: *mut $crate::abi::DeviceImage,
        ) -> i32 {
            // SAFETY: `image` is null or a valid `__tgt_device_image` (this
            // entry's contract, forwarded), as `is_device_compatible` requires.
            unsafe { $crate::entry_bodies::is_device_compatible(&$cell, device, image) }
        }

        /// `__tgt_rtl_data_alloc`: the caller owns the memory until
        /// `__tgt_rtl_data_delete`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_data_alloc(
            device: i32,
            size: i64,
            host_ptr: *mut ::core::ffi::c_void,
            kind: i32,
        ) -> *mut ::core::ffi::c_void {
            $crate::entry_bodies::data_alloc(&$cell, device, size, host_ptr, kind)
        }

        /// `__tgt_rtl_data_submit`.
        ///
        /// # Safety
        /// Both pointers are valid for `size` bytes.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_submit(
            device: i32,
            tgt_ptr: *mut ::core::ffi::c_void,
            host_ptr: *mut ::core::ffi::c_void,
            size: i64,
        ) -> i32 {
            // SAFETY: both pointers are valid for `size` bytes (this entry's
            // contract, forwarded), as `data_submit` requires.
            unsafe { $crate::entry_bodies::data_submit(&$cell, device, tgt_ptr, host_ptr, size, None) }
        }

        /// `__tgt_rtl_data_retrieve`.
        ///
        /// # Safety
        /// Both pointers are valid for `size` bytes.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_retrieve(
            device: i32,
            host_ptr: *mut ::core::ffi::c_void,
            tgt_ptr: *mut ::core::ffi::c_void,
            size: i64,
        ) -> i32 {
            // SAFETY: both pointers are valid for `size` bytes (this entry's
            // contract, forwarded), as `data_retrieve` requires.
            unsafe { $crate::entry_bodies::data_retrieve(&$cell, device, host_ptr, tgt_ptr, size, None) }
        }

        /// `__tgt_rtl_data_delete`: `tgt_ptr` came from `data_alloc`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_data_delete(
            device: i32,
            tgt_ptr: *mut ::core::ffi::c_void,
        ) -> i32 {
            $crate::entry_bodies::data_delete(&$cell, device, tgt_ptr)
        }

        /// `__tgt_rtl_data_delete_batch` (this project's entry): free
        /// `ptrs[0..n]`, nulling each slot freed.
        ///
        /// # Safety
        /// `ptrs` is null or valid for reads and writes of `n` pointers.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_delete_batch(
            device: i32,
            ptrs: *mut *mut ::core::ffi::c_void,
            n: i64,
        ) -> i32 {
            // SAFETY: `ptrs` is null or valid for reads and writes of `n`
            // pointers (this entry's contract, forwarded), as
            // `data_delete_batch` requires.
            unsafe { $crate::entry_bodies::data_delete_batch(&$cell, device, ptrs, n) }
        }

        /// `__tgt_rtl_run_target_region`.
        ///
        /// # Safety
        /// `entry` is from this device's target table; `args` and
        /// `offsets` hold `num_args` values each.
        $(#[$attr])*
        pub unsafe extern "C-unwind" fn __tgt_rtl_run_target_region(
            device: i32,
            entry: *mut ::core::ffi::c_void,
            args: *mut *mut ::core::ffi::c_void,
            offsets: *mut isize,
            num_args: i32,
        ) -> i32 {
            // SAFETY: `entry` is from this device's target table and `args`
            // and `offsets` hold `num_args` values each (this entry's
            // contract, forwarded), as `run_region` requires.
            unsafe {
                $crate::entry_bodies::run_region(&$cell, device, entry, args, offsets, num_args, None, None)
            }
        }

        /// `__tgt_rtl_run_target_team_region`.
        ///
        /// # Safety
        /// As `__tgt_rtl_run_target_region`.
        $(#[$attr])*
        pub unsafe extern "C-unwind" fn __tgt_rtl_run_target_team_region(
            device: i32,
            entry: *mut ::core::ffi::c_void,
            args: *mut *mut ::core::ffi::c_void,
            offsets: *mut isize,
            num_args: i32,
            num_teams: i32,
            thread_limit: i32,
            loop_tripcount: u64,
        ) -> i32 {
            let teams = $crate::TeamConfig {
                num_teams,
                thread_limit,
                loop_tripcount,
            };
            // SAFETY: `entry` is from this device's target table and `args`
            // and `offsets` hold `num_args` values each (this entry's
            // contract, forwarded), as `run_region` requires.
            unsafe {
                $crate::entry_bodies::run_region(
                    &$cell,
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    Some(teams),
                    None,
                )
            }
        }

        const _: () = {
            use $crate::abi::plugin as p;
            let _: p::NumberOfDevicesFn = __tgt_rtl_number_of_devices;
            let _: p::IsValidBinaryFn = __tgt_rtl_is_valid_binary;
            let _: p::InitDeviceFn = __tgt_rtl_init_device;
            let _: p::LoadBinaryFn = __tgt_rtl_load_binary;
            let _: p::DataAllocFn = __tgt_rtl_data_alloc;
            let _: p::DataSubmitFn = __tgt_rtl_data_submit;
            let _: p::DataRetrieveFn = __tgt_rtl_data_retrieve;
            let _: p::DataDeleteFn = __tgt_rtl_data_delete;
            let _: p::RunTargetRegionFn = __tgt_rtl_run_target_region;
            let _: p::RunTargetTeamRegionFn = __tgt_rtl_run_target_team_region;
        };
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_optional {
    ($cell:ident $(, #[$attr:meta])*) => {
        /// `__tgt_rtl_init_requires`: returns the flags accepted.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_init_requires(flags: i64) -> i64 {
            $crate::entry_bodies::init_requires(&$cell, flags)
        }

        /// `__tgt_rtl_is_data_exchangable`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_is_data_exchangable(src: i32, dst: i32) -> i32 {
            $crate::entry_bodies::is_data_exchangable(&$cell, src, dst)
        }

        /// `__tgt_rtl_data_exchange`.
        ///
        /// # Safety
        /// Both pointers are valid on their devices for `size` bytes.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_exchange(
            src: i32,
            src_ptr: *mut ::core::ffi::c_void,
            dst: i32,
            dst_ptr: *mut ::core::ffi::c_void,
            size: i64,
        ) -> i32 {
            // SAFETY: both pointers are valid on their devices for `size`
            // bytes (this entry's contract, forwarded), as `data_exchange`
            // requires.
            unsafe { $crate::entry_bodies::data_exchange(&$cell, src, src_ptr, dst, dst_ptr, size, None) }
        }

        /// `__tgt_rtl_data_exchange_async`: queued on `async_info` by
        /// a backend with queues, blocking otherwise.
        ///
        /// # Safety
        /// As `__tgt_rtl_data_exchange`; `async_info` is null or a valid
        /// `__tgt_async_info`, and the memory stays valid until its queue
        /// is synchronised.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_exchange_async(
            src: i32,
            src_ptr: *mut ::core::ffi::c_void,
            dst: i32,
            dst_ptr: *mut ::core::ffi::c_void,
            size: i64,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            // SAFETY: both pointers are valid on their devices for `size`
            // bytes and `async_info` is null or a valid `__tgt_async_info`
            // (this entry's contract, forwarded), as `data_exchange` requires.
            unsafe {
                $crate::entry_bodies::data_exchange(&$cell, src, src_ptr, dst, dst_ptr, size, Some(async_info))
            }
        }

        /// `__tgt_rtl_data_submit_async`: queued on `async_info` by
        /// a backend with queues, blocking otherwise.
        ///
        /// # Safety
        /// As `__tgt_rtl_data_submit`; `async_info` is null or a valid
        /// `__tgt_async_info`, and the memory stays valid until its queue
        /// is synchronised.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_submit_async(
            device: i32,
            tgt_ptr: *mut ::core::ffi::c_void,
            host_ptr: *mut ::core::ffi::c_void,
            size: i64,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            // SAFETY: both pointers are valid for `size` bytes and
            // `async_info` is null or a valid `__tgt_async_info` (this
            // entry's contract, forwarded), as `data_submit` requires.
            unsafe {
                $crate::entry_bodies::data_submit(&$cell, device, tgt_ptr, host_ptr, size, Some(async_info))
            }
        }

        /// `__tgt_rtl_data_retrieve_async`: queued on `async_info` by
        /// a backend with queues, blocking otherwise.
        ///
        /// # Safety
        /// As `__tgt_rtl_data_retrieve`; `async_info` is null or a valid
        /// `__tgt_async_info`, and the memory stays valid until its queue
        /// is synchronised.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_data_retrieve_async(
            device: i32,
            host_ptr: *mut ::core::ffi::c_void,
            tgt_ptr: *mut ::core::ffi::c_void,
            size: i64,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            // SAFETY: both pointers are valid for `size` bytes and
            // `async_info` is null or a valid `__tgt_async_info` (this
            // entry's contract, forwarded), as `data_retrieve` requires.
            unsafe {
                $crate::entry_bodies::data_retrieve(&$cell, device, host_ptr, tgt_ptr, size, Some(async_info))
            }
        }

        /// `__tgt_rtl_run_target_region_async`: queued on `async_info` by
        /// a backend with queues, blocking otherwise.
        ///
        /// # Safety
        /// As `__tgt_rtl_run_target_region`; `async_info` is null or a valid
        /// `__tgt_async_info`, and the memory stays valid until its queue
        /// is synchronised.
        $(#[$attr])*
        pub unsafe extern "C-unwind" fn __tgt_rtl_run_target_region_async(
            device: i32,
            entry: *mut ::core::ffi::c_void,
            args: *mut *mut ::core::ffi::c_void,
            offsets: *mut isize,
            num_args: i32,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            // SAFETY: `entry` is from this device's target table, `args`
            // and `offsets` hold `num_args` values each and `async_info` is
            // null or a valid `__tgt_async_info` (this entry's contract,
            // forwarded), as `run_region` requires.
            unsafe {
                $crate::entry_bodies::run_region(
                    &$cell,
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    None,
                    Some(async_info),
                )
            }
        }

        /// `__tgt_rtl_run_target_team_region_async`: queued on `async_info` by
        /// a backend with queues, blocking otherwise.
        ///
        /// # Safety
        /// As `__tgt_rtl_run_target_region`; `async_info` is null or a valid
        /// `__tgt_async_info`, and the memory stays valid until its queue
        /// is synchronised.
        $(#[$attr])*
        pub unsafe extern "C-unwind" fn __tgt_rtl_run_target_team_region_async(
            device: i32,
            entry: *mut ::core::ffi::c_void,
            args: *mut *mut ::core::ffi::c_void,
            offsets: *mut isize,
            num_args: i32,
            num_teams: i32,
            thread_limit: i32,
            loop_tripcount: u64,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            let teams = $crate::TeamConfig {
                num_teams,
                thread_limit,
                loop_tripcount,
            };
            // SAFETY: `entry` is from this device's target table, `args`
            // and `offsets` hold `num_args` values each and `async_info` is
            // null or a valid `__tgt_async_info` (this entry's contract,
            // forwarded), as `run_region` requires.
            unsafe {
                $crate::entry_bodies::run_region(
                    &$cell,
                    device,
                    entry,
                    args,
                    offsets,
                    num_args,
                    Some(teams),
                    Some(async_info),
                )
            }
        }

        /// `__tgt_rtl_synchronize`: wait for `async_info`'s queue and
        /// give it back (the backend's `synchronize`; a null
        /// `async_info`: its `synchronize_device`).
        ///
        /// # Safety
        /// `async_info` is null or a valid `__tgt_async_info`.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_synchronize(
            device: i32,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            // SAFETY: `async_info` is null or a valid `__tgt_async_info`
            // (this entry's contract, forwarded), as `synchronize` requires.
            unsafe { $crate::entry_bodies::synchronize(&$cell, device, async_info) }
        }

        /// `__tgt_rtl_set_info_flag`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_set_info_flag(flags: u32) {
            $crate::entry_bodies::set_info_flag(&$cell, flags)
        }

        /// `__tgt_rtl_print_device_info`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_print_device_info(device: i32) {
            $crate::entry_bodies::print_device_info(&$cell, device)
        }

        const _: () = {
            use $crate::abi::plugin as p;
            let _: p::InitRequiresFn = __tgt_rtl_init_requires;
            let _: p::IsDataExchangableFn = __tgt_rtl_is_data_exchangable;
            let _: p::DataExchangeFn = __tgt_rtl_data_exchange;
            let _: p::DataExchangeAsyncFn = __tgt_rtl_data_exchange_async;
            let _: p::DataSubmitAsyncFn = __tgt_rtl_data_submit_async;
            let _: p::DataRetrieveAsyncFn = __tgt_rtl_data_retrieve_async;
            let _: p::RunTargetRegionAsyncFn = __tgt_rtl_run_target_region_async;
            let _: p::RunTargetTeamRegionAsyncFn = __tgt_rtl_run_target_team_region_async;
            let _: p::SynchronizeFn = __tgt_rtl_synchronize;
            let _: p::SetInfoFlagFn = __tgt_rtl_set_info_flag;
            let _: p::PrintDeviceInfoFn = __tgt_rtl_print_device_info;
        };
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export_lifecycle {
    ($cell:ident $(, #[$attr:meta])*) => {
        /// `__tgt_rtl_init_plugin`: create the plugin state.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_init_plugin() -> i32 {
            $crate::entry_bodies::init_plugin(&$cell)
        }

        /// `__tgt_rtl_deinit_plugin`: release everything the plugin holds.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_deinit_plugin() -> i32 {
            $crate::entry_bodies::deinit_plugin(&$cell)
        }

        /// `__tgt_rtl_deinit_device`.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_deinit_device(device: i32) -> i32 {
            $crate::entry_bodies::deinit_device(&$cell, device)
        }

        /// `__tgt_rtl_unload_binary`: the image's target table is invalid
        /// afterwards.
        ///
        /// # Safety
        /// `image` is the descriptor given to `load_binary` (only its
        /// address is used).
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_unload_binary(
            device: i32,
            image: *mut $crate::abi::DeviceImage,
        ) -> i32 {
            // SAFETY: `image` is the descriptor given to `load_binary`, of
            // which only the address is used (this entry's contract,
            // forwarded), as `unload_binary` requires.
            unsafe { $crate::entry_bodies::unload_binary(&$cell, device, image) }
        }

        /// `__tgt_rtl_register_destruction_cb`: `callback(data)` is called
        /// by the safety net if the library goes away while initialised.
        $(#[$attr])*
        pub extern "C" fn __tgt_rtl_register_destruction_cb(
            callback: ::core::option::Option<$crate::abi::plugin::DestructionCallback>,
            data: *mut ::core::ffi::c_void,
        ) {
            $crate::entry_bodies::register_destruction_cb(&$cell, callback, data)
        }

        /// `__tgt_rtl_last_error_message` (this project's entry).
        ///
        /// # Safety
        /// `buf` is null or writable for `cap` bytes.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_last_error_message(
            buf: *mut ::core::ffi::c_char,
            cap: usize,
        ) -> usize {
            // SAFETY: `buf` is null or writable for `cap` bytes (this
            // entry's contract, forwarded), as `last_error_message` requires.
            unsafe { $crate::entry_bodies::last_error_message(buf, cap) }
        }

        /// `__tgt_rtl_run_typed_region` (this project's entry; queued on a
        /// non-null `async_info` by a backend with queues).
        ///
        /// # Safety
        /// As the other launch entries, with `arg_types` `num_args` bytes.
        $(#[$attr])*
        pub unsafe extern "C-unwind" fn __tgt_rtl_run_typed_region(
            device: i32,
            entry: *mut ::core::ffi::c_void,
            args: *mut *mut ::core::ffi::c_void,
            offsets: *mut isize,
            arg_types: *const u8,
            num_args: i32,
            num_teams: i32,
            thread_limit: i32,
            loop_tripcount: u64,
            async_info: *mut $crate::abi::AsyncInfo,
        ) -> i32 {
            let teams = (num_teams >= 0).then_some($crate::TeamConfig {
                num_teams,
                thread_limit,
                loop_tripcount,
            });
            // SAFETY: `entry` is from this device's target table, `args`
            // and `offsets` hold `num_args` values each, `arg_types`
            // `num_args` bytes, and `async_info` is null or a valid
            // `__tgt_async_info` (this entry's contract, forwarded), as
            // `run_typed_region` requires.
            unsafe {
                $crate::entry_bodies::run_typed_region(
                    &$cell, device, entry, args, offsets, arg_types, num_args, teams, async_info,
                )
            }
        }

        /// `__tgt_rtl_get_device_info` (this project's entry): one
        /// property of a device (the backend's `device_info`).
        ///
        /// # Safety
        /// `size` is null or writable; `value` is null or writable for
        /// `cap` bytes.
        $(#[$attr])*
        pub unsafe extern "C" fn __tgt_rtl_get_device_info(
            device: i32,
            key: i32,
            value: *mut ::core::ffi::c_void,
            cap: usize,
            size: *mut usize,
        ) -> i32 {
            // SAFETY: `size` is null or writable and `value` null or
            // writable for `cap` bytes (this entry's contract, forwarded),
            // as `get_device_info` requires.
            unsafe { $crate::entry_bodies::get_device_info(&$cell, device, key, value, cap, size) }
        }

        const _: () = {
            use $crate::abi::plugin as p;
            let _: p::InitPluginFn = __tgt_rtl_init_plugin;
            let _: p::DeinitPluginFn = __tgt_rtl_deinit_plugin;
            let _: p::DeinitDeviceFn = __tgt_rtl_deinit_device;
            let _: p::UnloadBinaryFn = __tgt_rtl_unload_binary;
            let _: p::RegisterDestructionCbFn = __tgt_rtl_register_destruction_cb;
            let _: p::LastErrorFn = __tgt_rtl_last_error_message;
            let _: p::RunTypedRegionFn = __tgt_rtl_run_typed_region;
            let _: p::DataDeleteBatchFn = __tgt_rtl_data_delete_batch;
            let _: p::LoadBinaryFlagsFn = __tgt_rtl_load_binary_flags;
            let _: p::IsDeviceCompatibleFn = __tgt_rtl_is_device_compatible;
            let _: p::GetDeviceInfoFn = __tgt_rtl_get_device_info;
        };
    };
}

/// The [`EntryTable`](crate::abi::plugin::EntryTable) of the entries
/// [`__export_entries!`] defined in the current scope; not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __entry_table {
    () => {
        $crate::abi::plugin::EntryTable {
            number_of_devices: __tgt_rtl_number_of_devices,
            is_valid_binary: __tgt_rtl_is_valid_binary,
            init_device: __tgt_rtl_init_device,
            load_binary: __tgt_rtl_load_binary,
            data_alloc: __tgt_rtl_data_alloc,
            data_submit: __tgt_rtl_data_submit,
            data_retrieve: __tgt_rtl_data_retrieve,
            data_delete: __tgt_rtl_data_delete,
            run_target_region: __tgt_rtl_run_target_region,
            run_target_team_region: __tgt_rtl_run_target_team_region,
            is_data_exchangable: Some(__tgt_rtl_is_data_exchangable),
            supports_empty_images: None,
            init_requires: Some(__tgt_rtl_init_requires),
            data_submit_async: Some(__tgt_rtl_data_submit_async),
            data_retrieve_async: Some(__tgt_rtl_data_retrieve_async),
            data_exchange: Some(__tgt_rtl_data_exchange),
            data_exchange_async: Some(__tgt_rtl_data_exchange_async),
            run_target_region_async: Some(__tgt_rtl_run_target_region_async),
            run_target_team_region_async: Some(__tgt_rtl_run_target_team_region_async),
            synchronize: Some(__tgt_rtl_synchronize),
            set_info_flag: Some(__tgt_rtl_set_info_flag),
            print_device_info: Some(__tgt_rtl_print_device_info),
            create_event: None,
            record_event: None,
            wait_event: None,
            sync_event: None,
            destroy_event: None,
            init_async_info: None,
            init_device_info: None,
            init_plugin: Some(__tgt_rtl_init_plugin),
            deinit_plugin: Some(__tgt_rtl_deinit_plugin),
            deinit_device: Some(__tgt_rtl_deinit_device),
            unload_binary: Some(__tgt_rtl_unload_binary),
            register_destruction_cb: Some(__tgt_rtl_register_destruction_cb),
            last_error: Some(__tgt_rtl_last_error_message),
            run_typed_region: Some(__tgt_rtl_run_typed_region),
            data_delete_batch: Some(__tgt_rtl_data_delete_batch),
            load_binary_flags: Some(__tgt_rtl_load_binary_flags),
            is_device_compatible: Some(__tgt_rtl_is_device_compatible),
            event_elapsed_time: None,
            get_device_info: Some(__tgt_rtl_get_device_info),
        }
    };
}

/// Declare `count` instances of a plugin built into a program, for a
/// runtime in the same program (no library file, no exported symbol, no C
/// entry at all).
///
/// `builtin_instances!(pub mod host_instances, MyBackend, [i0, i1, i2]);`
/// declares module `host_instances` with one private module per listed
/// instance, each with its own [`PluginCell`](crate::PluginCell) static and
/// its [`NativePlugin`](crate::builtin::NativePlugin) (the same entry bodies
/// [`export_plugin!`] exports, called from Rust with the
/// [`Native`](crate::boundary::Native) boundary), and
///
/// * `COUNT`: the number of instances;
/// * `fn instance(index) -> Option<Instance>`: its calls (an
///   [`omptarget_abi::plugin::PluginCalls`] object) and a key that
///   identifies its state.
///
/// Each instance is a separate plugin state, so several runtimes in one
/// process each get their own, with its own lifecycle. Unlike an exported
/// plugin, an instance has no safety net (its code is part of the program
/// and cannot be unloaded before the runtime) and no fork handlers.
#[macro_export]
macro_rules! builtin_instances {
    ($vis:vis mod $module:ident, $backend:ty, [$($instance:ident),+ $(,)?]) => {
        $vis mod $module {
            $(
                #[allow(non_snake_case)]
                mod $instance {
                    #[allow(unused_imports)]
                    use super::super::*;
                    /// This instance's plugin state, called natively only.
                    static CELL: $crate::PluginCell<$backend, $crate::boundary::Native> =
                        $crate::PluginCell::new();
                    /// This instance's entries.
                    static CALLS: $crate::builtin::NativePlugin<$backend> =
                        $crate::builtin::NativePlugin::new(&CELL);
                    /// This instance's entries and state key.
                    pub fn instance() -> $crate::builtin::Instance {
                        $crate::builtin::Instance {
                            calls: &CALLS,
                            key: &CELL as *const _ as usize,
                        }
                    }
                }
            )+

            /// The number of instances.
            pub const COUNT: usize = [$(stringify!($instance)),+].len();

            /// Instance `index` (`< COUNT`).
            pub fn instance(index: usize) -> Option<$crate::builtin::Instance> {
                let all: [fn() -> $crate::builtin::Instance; COUNT] = [$($instance::instance),+];
                all.get(index).map(|make| make())
            }
        }
    };
}

/// [`export_plugin!`] expanded once in this crate, for a backend with one
/// device that does nothing. rustc's `unsafe_op_in_unsafe_fn` and clippy's
/// `undocumented_unsafe_blocks` skip the expansions of another crate's
/// macros, so the plugins that invoke the macro never lint its bodies: this
/// expansion is where the workspace's unsafe lints see them. `#[no_mangle]`
/// is no clash: nothing else in the kit's test binary defines `__tgt_rtl_*`.
#[cfg(test)]
mod expansion;
