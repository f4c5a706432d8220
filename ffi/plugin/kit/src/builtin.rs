//! Plugins built into a program: see [`crate::builtin_instances!`].
//!
//! A built-in instance is called natively: [`NativePlugin`] implements the
//! ABI's [`PluginCalls`] by calling the same entry bodies an exported
//! plugin's C entries call, with the [`Native`] boundary (no panic
//! boundary of its own in a launch, a kernel's thread exit left pending
//! for the caller; other entries catch a panic as a C entry does). Only a runtime in the same binary may hold one: it shares the
//! plugin's thread-local state (`omptarget_thread_exit`'s pending exit,
//! [`crate::last_error`]) and its Rust panics.

use crate::abi::plugin::{DestructionCallback, OptionalEntry, PluginCalls};
use crate::abi::{AsyncInfo, DeviceImage, DeviceInfo, TargetTable};
use crate::boundary::Native;
use crate::entry_bodies as body;
use crate::{Backend, PluginCell, TeamConfig};
use std::ffi::{c_char, c_void};

/// One instance of a built-in plugin.
#[derive(Clone, Copy)]
pub struct Instance {
    /// Its entries, called natively.
    pub calls: &'static dyn PluginCalls,
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

/// Whether a plugin of this kit has `entry`: what [`crate::export_plugin!`]
/// exports (its `EntryTable` says the same: a test of the kit checks it),
/// and so what a [`NativePlugin`] answers.
pub const fn kit_exports(entry: OptionalEntry) -> bool {
    use OptionalEntry::*;
    !matches!(
        entry,
        SupportsEmptyImages
            | CreateEvent
            | RecordEvent
            | WaitEvent
            | SyncEvent
            | DestroyEvent
            | EventElapsedTime
            | InitAsyncInfo
            | InitDeviceInfo
    )
}

/// A built-in instance's entries, called from Rust: see the module docs.
pub struct NativePlugin<B: Backend> {
    cell: &'static PluginCell<B, Native>,
}

impl<B: Backend> NativePlugin<B> {
    /// The entries of the instance whose state is `cell`.
    pub const fn new(cell: &'static PluginCell<B, Native>) -> Self {
        Self { cell }
    }
}

/// The team configuration of a launch with teams.
fn teams(num_teams: i32, thread_limit: i32, loop_tripcount: u64) -> TeamConfig {
    TeamConfig {
        num_teams,
        thread_limit,
        loop_tripcount,
    }
}

// Every method: the entry body the C entry of the same name calls, with the
// same arguments (`export.rs`), on this instance's cell.
impl<B: Backend> PluginCalls for NativePlugin<B> {
    fn is_native(&self) -> bool {
        true
    }

    fn exports(&self, entry: OptionalEntry) -> bool {
        kit_exports(entry)
    }

    unsafe fn number_of_devices(&self) -> i32 {
        body::number_of_devices(self.cell)
    }
    unsafe fn is_valid_binary(&self, image: *mut DeviceImage) -> i32 {
        // SAFETY: the trait's contract: `image` is null or a valid image.
        unsafe { body::is_valid_binary(self.cell, image) }
    }
    unsafe fn init_device(&self, device: i32) -> i32 {
        body::init_device(self.cell, device)
    }
    unsafe fn load_binary(&self, device: i32, image: *mut DeviceImage) -> *mut TargetTable {
        // SAFETY: the trait's contract: `image` is null or a valid image.
        unsafe { body::load_binary(self.cell, device, image) }
    }
    unsafe fn data_alloc(
        &self,
        device: i32,
        size: i64,
        host_ptr: *mut c_void,
        kind: i32,
    ) -> *mut c_void {
        body::data_alloc(self.cell, device, size, host_ptr, kind)
    }
    unsafe fn data_submit(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: the trait's contract: the entry's arguments.
        unsafe { body::data_submit(self.cell, device, tgt_ptr, host_ptr, size, None) }
    }
    unsafe fn data_retrieve(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: the trait's contract: the entry's arguments.
        unsafe { body::data_retrieve(self.cell, device, host_ptr, tgt_ptr, size, None) }
    }
    unsafe fn data_delete(&self, device: i32, tgt_ptr: *mut c_void) -> i32 {
        body::data_delete(self.cell, device, tgt_ptr)
    }
    unsafe fn run_target_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
    ) -> i32 {
        // SAFETY: the trait's contract: the entry's arguments.
        unsafe {
            body::run_region(
                self.cell, device, entry, args, offsets, num_args, None, None,
            )
        }
    }
    unsafe fn run_target_team_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
    ) -> i32 {
        let teams = teams(num_teams, thread_limit, loop_tripcount);
        // SAFETY: the trait's contract: the entry's arguments.
        unsafe {
            body::run_region(
                self.cell,
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

    unsafe fn is_data_exchangable(&self, src_device: i32, dst_device: i32) -> Option<i32> {
        Some(body::is_data_exchangable(self.cell, src_device, dst_device))
    }
    unsafe fn supports_empty_images(&self) -> Option<i32> {
        None
    }
    unsafe fn init_requires(&self, requires_flags: i64) -> Option<i64> {
        Some(body::init_requires(self.cell, requires_flags))
    }
    unsafe fn data_submit_async(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::data_submit(self.cell, device, tgt_ptr, host_ptr, size, Some(async_info))
        })
    }
    unsafe fn data_retrieve_async(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::data_retrieve(self.cell, device, host_ptr, tgt_ptr, size, Some(async_info))
        })
    }
    unsafe fn data_exchange(
        &self,
        src_device: i32,
        src_ptr: *mut c_void,
        dst_device: i32,
        dst_ptr: *mut c_void,
        size: i64,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::data_exchange(
                self.cell, src_device, src_ptr, dst_device, dst_ptr, size, None,
            )
        })
    }
    unsafe fn data_exchange_async(
        &self,
        src_device: i32,
        src_ptr: *mut c_void,
        dst_device: i32,
        dst_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::data_exchange(
                self.cell,
                src_device,
                src_ptr,
                dst_device,
                dst_ptr,
                size,
                Some(async_info),
            )
        })
    }
    unsafe fn run_target_region_async(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::run_region(
                self.cell,
                device,
                entry,
                args,
                offsets,
                num_args,
                None,
                Some(async_info),
            )
        })
    }
    unsafe fn run_target_team_region_async(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        let teams = teams(num_teams, thread_limit, loop_tripcount);
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::run_region(
                self.cell,
                device,
                entry,
                args,
                offsets,
                num_args,
                Some(teams),
                Some(async_info),
            )
        })
    }
    unsafe fn synchronize(&self, device: i32, async_info: *mut AsyncInfo) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::synchronize(self.cell, device, async_info) })
    }
    unsafe fn set_info_flag(&self, flags: u32) -> Option<()> {
        body::set_info_flag(self.cell, flags);
        Some(())
    }
    unsafe fn print_device_info(&self, device: i32) -> Option<()> {
        body::print_device_info(self.cell, device);
        Some(())
    }
    unsafe fn create_event(&self, _device: i32, _event: *mut *mut c_void) -> Option<i32> {
        None
    }
    unsafe fn record_event(
        &self,
        _device: i32,
        _event: *mut c_void,
        _async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        None
    }
    unsafe fn wait_event(
        &self,
        _device: i32,
        _event: *mut c_void,
        _async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        None
    }
    unsafe fn sync_event(&self, _device: i32, _event: *mut c_void) -> Option<i32> {
        None
    }
    unsafe fn destroy_event(&self, _device: i32, _event: *mut c_void) -> Option<i32> {
        None
    }
    unsafe fn event_elapsed_time(
        &self,
        _device: i32,
        _start: *mut c_void,
        _end: *mut c_void,
        _ms: *mut f32,
    ) -> Option<i32> {
        None
    }
    unsafe fn init_async_info(
        &self,
        _device: i32,
        _async_info: *mut *mut AsyncInfo,
    ) -> Option<i32> {
        None
    }
    unsafe fn init_device_info(
        &self,
        _device: i32,
        _device_info: *mut DeviceInfo,
        _err_str: *mut *const c_char,
    ) -> Option<i32> {
        None
    }
    unsafe fn init_plugin(&self) -> Option<i32> {
        Some(body::init_plugin(self.cell))
    }
    unsafe fn deinit_plugin(&self) -> Option<i32> {
        Some(body::deinit_plugin(self.cell))
    }
    unsafe fn deinit_device(&self, device: i32) -> Option<i32> {
        Some(body::deinit_device(self.cell, device))
    }
    unsafe fn unload_binary(&self, device: i32, image: *mut DeviceImage) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::unload_binary(self.cell, device, image) })
    }
    unsafe fn register_destruction_cb(
        &self,
        callback: Option<DestructionCallback>,
        data: *mut c_void,
    ) -> Option<()> {
        body::register_destruction_cb(self.cell, callback, data);
        Some(())
    }
    unsafe fn last_error_message(&self, buf: *mut c_char, cap: usize) -> Option<usize> {
        // SAFETY: the trait's contract: `buf` is writable for `cap` bytes.
        Some(unsafe { body::last_error_message(buf, cap) })
    }
    unsafe fn run_typed_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        arg_types: *const u8,
        num_args: i32,
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        let teams = (num_teams >= 0).then(|| teams(num_teams, thread_limit, loop_tripcount));
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe {
            body::run_typed_region(
                self.cell, device, entry, args, offsets, arg_types, num_args, teams, async_info,
            )
        })
    }
    unsafe fn data_delete_batch(&self, device: i32, ptrs: *mut *mut c_void, n: i64) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::data_delete_batch(self.cell, device, ptrs, n) })
    }
    unsafe fn load_binary_flags(
        &self,
        device: i32,
        image: *mut DeviceImage,
        flags: u32,
    ) -> Option<*mut TargetTable> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::load_binary_flags(self.cell, device, image, flags) })
    }
    unsafe fn is_device_compatible(&self, device: i32, image: *mut DeviceImage) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::is_device_compatible(self.cell, device, image) })
    }
    unsafe fn get_device_info(
        &self,
        device: i32,
        key: i32,
        value: *mut c_void,
        cap: usize,
        size: *mut usize,
    ) -> Option<i32> {
        // SAFETY: the trait's contract: the entry's arguments.
        Some(unsafe { body::get_device_info(self.cell, device, key, value, cap, size) })
    }
}
