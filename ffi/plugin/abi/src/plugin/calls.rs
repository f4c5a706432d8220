//! [`PluginCalls`]: a plugin's entries as one object-safe Rust trait, so
//! that a runtime drives a plugin in a library (its C [`EntryTable`]) and a
//! plugin built into the runtime's own binary (the plugin kit's native
//! instance, no C in between) through the same calls.
//!
//! Each method is the entry of the same name with the same raw arguments
//! and the same `i32` code, pointer or count: a call site changes from
//! `(e.data_alloc)(..)` to `e.data_alloc(..)`. An optional entry's method
//! returns `None` when the plugin does not have it (and then did nothing);
//! [`PluginCalls::exports`] asks without calling.
//!
//! Why a trait and not only the table: a C entry needs its own panic
//! boundary and its own interception of a kernel's thread exit (nothing may
//! unwind into C, and a forced unwind must not meet that boundary). A
//! plugin in the same binary as its runtime shares the runtime's
//! thread-local state and is called from Rust, so one boundary (the
//! caller's) and one interception (the backend's, around the kernel) are
//! enough: [`PluginCalls::is_native`] says which kind the runtime holds.

use super::*;

/// Writes [`OptionalEntry`], its [`OptionalEntry::ALL`] and its
/// [`OptionalEntry::name`] from one list, so that the three cannot
/// disagree.
macro_rules! optional_entries {
    ($($entry:ident => $name:ident,)*) => {
        /// The optional entries of [`EntryTable`], for [`PluginCalls::exports`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)] // each is the entry of the same name
        pub enum OptionalEntry {
            $($entry,)*
        }

        impl OptionalEntry {
            /// Every optional entry, in the order diagnostics list them.
            pub const ALL: [OptionalEntry; [$(OptionalEntry::$entry),*].len()] =
                [$(OptionalEntry::$entry),*];

            /// The entry's symbol (`__tgt_rtl_...`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(OptionalEntry::$entry => names::$name,)*
                }
            }
        }
    };
}

optional_entries! {
    LastErrorMessage => LAST_ERROR_MESSAGE,
    RunTypedRegion => RUN_TYPED_REGION,
    DataDeleteBatch => DATA_DELETE_BATCH,
    GetDeviceInfo => GET_DEVICE_INFO,
    LoadBinaryFlags => LOAD_BINARY_FLAGS,
    IsDeviceCompatible => IS_DEVICE_COMPATIBLE,
    IsDataExchangable => IS_DATA_EXCHANGABLE,
    SupportsEmptyImages => SUPPORTS_EMPTY_IMAGES,
    InitRequires => INIT_REQUIRES,
    DataSubmitAsync => DATA_SUBMIT_ASYNC,
    DataRetrieveAsync => DATA_RETRIEVE_ASYNC,
    DataExchange => DATA_EXCHANGE,
    DataExchangeAsync => DATA_EXCHANGE_ASYNC,
    RunTargetRegionAsync => RUN_TARGET_REGION_ASYNC,
    RunTargetTeamRegionAsync => RUN_TARGET_TEAM_REGION_ASYNC,
    Synchronize => SYNCHRONIZE,
    SetInfoFlag => SET_INFO_FLAG,
    PrintDeviceInfo => PRINT_DEVICE_INFO,
    CreateEvent => CREATE_EVENT,
    RecordEvent => RECORD_EVENT,
    WaitEvent => WAIT_EVENT,
    SyncEvent => SYNC_EVENT,
    DestroyEvent => DESTROY_EVENT,
    EventElapsedTime => EVENT_ELAPSED_TIME,
    InitAsyncInfo => INIT_ASYNC_INFO,
    InitDeviceInfo => INIT_DEVICE_INFO,
    InitPlugin => INIT_PLUGIN,
    DeinitPlugin => DEINIT_PLUGIN,
    DeinitDevice => DEINIT_DEVICE,
    UnloadBinary => UNLOAD_BINARY,
    RegisterDestructionCb => REGISTER_DESTRUCTION_CB,
}

/// A plugin's entries, callable from Rust. See the [module docs](self).
///
/// # Safety (all `unsafe` methods)
/// The plugin's code is still there (a library's table is used only while
/// the library is open and its plugin alive), and the arguments are what
/// the entry's C type in [`super`] says they are.
#[allow(missing_docs)] // each method is the entry of the same name
#[allow(clippy::too_many_arguments, clippy::missing_safety_doc)] // the ABI's arity; the trait docs
pub trait PluginCalls: Send + Sync {
    /// False for a plugin reached through C entries (a library's, or any
    /// [`EntryTable`]): each call has the plugin's own panic boundary, and
    /// a kernel's thread exit unwinds out of the launch call (the caller
    /// intercepts it). True for a plugin built into the caller's binary:
    /// a panic unwinds to the caller as any Rust call's, and a kernel's
    /// thread exit comes back as a normal return with the exit pending on
    /// this thread (`omptarget_thread_exit::set_pending`): the caller
    /// neither intercepts it nor may clear it.
    fn is_native(&self) -> bool;
    /// Whether the plugin has `entry` (its method then returns `Some`).
    fn exports(&self, entry: OptionalEntry) -> bool;

    // ---- required ----
    unsafe fn number_of_devices(&self) -> i32;
    unsafe fn is_valid_binary(&self, image: *mut DeviceImage) -> i32;
    unsafe fn init_device(&self, device: i32) -> i32;
    unsafe fn load_binary(&self, device: i32, image: *mut DeviceImage) -> *mut TargetTable;
    unsafe fn data_alloc(
        &self,
        device: i32,
        size: i64,
        host_ptr: *mut c_void,
        kind: i32,
    ) -> *mut c_void;
    unsafe fn data_submit(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
    ) -> i32;
    unsafe fn data_retrieve(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
    ) -> i32;
    unsafe fn data_delete(&self, device: i32, tgt_ptr: *mut c_void) -> i32;
    unsafe fn run_target_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
    ) -> i32;
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
    ) -> i32;

    // ---- optional ----
    unsafe fn is_data_exchangable(&self, src_device: i32, dst_device: i32) -> Option<i32>;
    unsafe fn supports_empty_images(&self) -> Option<i32>;
    unsafe fn init_requires(&self, requires_flags: i64) -> Option<i64>;
    unsafe fn data_submit_async(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
    unsafe fn data_retrieve_async(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
    unsafe fn data_exchange(
        &self,
        src_device: i32,
        src_ptr: *mut c_void,
        dst_device: i32,
        dst_ptr: *mut c_void,
        size: i64,
    ) -> Option<i32>;
    unsafe fn data_exchange_async(
        &self,
        src_device: i32,
        src_ptr: *mut c_void,
        dst_device: i32,
        dst_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
    unsafe fn run_target_region_async(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
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
    ) -> Option<i32>;
    unsafe fn synchronize(&self, device: i32, async_info: *mut AsyncInfo) -> Option<i32>;
    unsafe fn set_info_flag(&self, flags: u32) -> Option<()>;
    unsafe fn print_device_info(&self, device: i32) -> Option<()>;
    unsafe fn create_event(&self, device: i32, event: *mut *mut c_void) -> Option<i32>;
    unsafe fn record_event(
        &self,
        device: i32,
        event: *mut c_void,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
    unsafe fn wait_event(
        &self,
        device: i32,
        event: *mut c_void,
        async_info: *mut AsyncInfo,
    ) -> Option<i32>;
    unsafe fn sync_event(&self, device: i32, event: *mut c_void) -> Option<i32>;
    unsafe fn destroy_event(&self, device: i32, event: *mut c_void) -> Option<i32>;
    unsafe fn event_elapsed_time(
        &self,
        device: i32,
        start: *mut c_void,
        end: *mut c_void,
        ms: *mut f32,
    ) -> Option<i32>;
    unsafe fn init_async_info(&self, device: i32, async_info: *mut *mut AsyncInfo) -> Option<i32>;
    unsafe fn init_device_info(
        &self,
        device: i32,
        device_info: *mut DeviceInfo,
        err_str: *mut *const c_char,
    ) -> Option<i32>;
    unsafe fn init_plugin(&self) -> Option<i32>;
    unsafe fn deinit_plugin(&self) -> Option<i32>;
    unsafe fn deinit_device(&self, device: i32) -> Option<i32>;
    unsafe fn unload_binary(&self, device: i32, image: *mut DeviceImage) -> Option<i32>;
    unsafe fn register_destruction_cb(
        &self,
        callback: Option<DestructionCallback>,
        data: *mut c_void,
    ) -> Option<()>;
    unsafe fn last_error_message(&self, buf: *mut c_char, cap: usize) -> Option<usize>;
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
    ) -> Option<i32>;
    unsafe fn data_delete_batch(&self, device: i32, ptrs: *mut *mut c_void, n: i64) -> Option<i32>;
    unsafe fn load_binary_flags(
        &self,
        device: i32,
        image: *mut DeviceImage,
        flags: u32,
    ) -> Option<*mut TargetTable>;
    unsafe fn is_device_compatible(&self, device: i32, image: *mut DeviceImage) -> Option<i32>;
    unsafe fn get_device_info(
        &self,
        device: i32,
        key: i32,
        value: *mut c_void,
        cap: usize,
        size: *mut usize,
    ) -> Option<i32>;
}

/// The C entries: each method calls the table's function pointer.
impl PluginCalls for EntryTable {
    fn is_native(&self) -> bool {
        false
    }

    fn exports(&self, entry: OptionalEntry) -> bool {
        use OptionalEntry::*;
        match entry {
            LastErrorMessage => self.last_error.is_some(),
            RunTypedRegion => self.run_typed_region.is_some(),
            DataDeleteBatch => self.data_delete_batch.is_some(),
            GetDeviceInfo => self.get_device_info.is_some(),
            LoadBinaryFlags => self.load_binary_flags.is_some(),
            IsDeviceCompatible => self.is_device_compatible.is_some(),
            IsDataExchangable => self.is_data_exchangable.is_some(),
            SupportsEmptyImages => self.supports_empty_images.is_some(),
            InitRequires => self.init_requires.is_some(),
            DataSubmitAsync => self.data_submit_async.is_some(),
            DataRetrieveAsync => self.data_retrieve_async.is_some(),
            DataExchange => self.data_exchange.is_some(),
            DataExchangeAsync => self.data_exchange_async.is_some(),
            RunTargetRegionAsync => self.run_target_region_async.is_some(),
            RunTargetTeamRegionAsync => self.run_target_team_region_async.is_some(),
            Synchronize => self.synchronize.is_some(),
            SetInfoFlag => self.set_info_flag.is_some(),
            PrintDeviceInfo => self.print_device_info.is_some(),
            CreateEvent => self.create_event.is_some(),
            RecordEvent => self.record_event.is_some(),
            WaitEvent => self.wait_event.is_some(),
            SyncEvent => self.sync_event.is_some(),
            DestroyEvent => self.destroy_event.is_some(),
            EventElapsedTime => self.event_elapsed_time.is_some(),
            InitAsyncInfo => self.init_async_info.is_some(),
            InitDeviceInfo => self.init_device_info.is_some(),
            InitPlugin => self.init_plugin.is_some(),
            DeinitPlugin => self.deinit_plugin.is_some(),
            DeinitDevice => self.deinit_device.is_some(),
            UnloadBinary => self.unload_binary.is_some(),
            RegisterDestructionCb => self.register_destruction_cb.is_some(),
        }
    }

    unsafe fn number_of_devices(&self) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.number_of_devices)() }
    }
    unsafe fn is_valid_binary(&self, image: *mut DeviceImage) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.is_valid_binary)(image) }
    }
    unsafe fn init_device(&self, device: i32) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.init_device)(device) }
    }
    unsafe fn load_binary(&self, device: i32, image: *mut DeviceImage) -> *mut TargetTable {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.load_binary)(device, image) }
    }
    unsafe fn data_alloc(
        &self,
        device: i32,
        size: i64,
        host_ptr: *mut c_void,
        kind: i32,
    ) -> *mut c_void {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.data_alloc)(device, size, host_ptr, kind) }
    }
    unsafe fn data_submit(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.data_submit)(device, tgt_ptr, host_ptr, size) }
    }
    unsafe fn data_retrieve(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
    ) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.data_retrieve)(device, host_ptr, tgt_ptr, size) }
    }
    unsafe fn data_delete(&self, device: i32, tgt_ptr: *mut c_void) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.data_delete)(device, tgt_ptr) }
    }
    unsafe fn run_target_region(
        &self,
        device: i32,
        entry: *mut c_void,
        args: *mut *mut c_void,
        offsets: *mut isize,
        num_args: i32,
    ) -> i32 {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.run_target_region)(device, entry, args, offsets, num_args) }
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
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe {
            (self.run_target_team_region)(
                device,
                entry,
                args,
                offsets,
                num_args,
                num_teams,
                thread_limit,
                loop_tripcount,
            )
        }
    }

    unsafe fn is_data_exchangable(&self, src_device: i32, dst_device: i32) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.is_data_exchangable?)(src_device, dst_device) })
    }
    unsafe fn supports_empty_images(&self) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.supports_empty_images?)() })
    }
    unsafe fn init_requires(&self, requires_flags: i64) -> Option<i64> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.init_requires?)(requires_flags) })
    }
    unsafe fn data_submit_async(
        &self,
        device: i32,
        tgt_ptr: *mut c_void,
        host_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.data_submit_async?)(device, tgt_ptr, host_ptr, size, async_info) })
    }
    unsafe fn data_retrieve_async(
        &self,
        device: i32,
        host_ptr: *mut c_void,
        tgt_ptr: *mut c_void,
        size: i64,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.data_retrieve_async?)(device, host_ptr, tgt_ptr, size, async_info) })
    }
    unsafe fn data_exchange(
        &self,
        src_device: i32,
        src_ptr: *mut c_void,
        dst_device: i32,
        dst_ptr: *mut c_void,
        size: i64,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.data_exchange?)(src_device, src_ptr, dst_device, dst_ptr, size) })
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
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe {
            (self.data_exchange_async?)(src_device, src_ptr, dst_device, dst_ptr, size, async_info)
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
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe {
            (self.run_target_region_async?)(device, entry, args, offsets, num_args, async_info)
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
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe {
            (self.run_target_team_region_async?)(
                device,
                entry,
                args,
                offsets,
                num_args,
                num_teams,
                thread_limit,
                loop_tripcount,
                async_info,
            )
        })
    }
    unsafe fn synchronize(&self, device: i32, async_info: *mut AsyncInfo) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.synchronize?)(device, async_info) })
    }
    unsafe fn set_info_flag(&self, flags: u32) -> Option<()> {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.set_info_flag?)(flags) };
        Some(())
    }
    unsafe fn print_device_info(&self, device: i32) -> Option<()> {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.print_device_info?)(device) };
        Some(())
    }
    unsafe fn create_event(&self, device: i32, event: *mut *mut c_void) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.create_event?)(device, event) })
    }
    unsafe fn record_event(
        &self,
        device: i32,
        event: *mut c_void,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.record_event?)(device, event, async_info) })
    }
    unsafe fn wait_event(
        &self,
        device: i32,
        event: *mut c_void,
        async_info: *mut AsyncInfo,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.wait_event?)(device, event, async_info) })
    }
    unsafe fn sync_event(&self, device: i32, event: *mut c_void) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.sync_event?)(device, event) })
    }
    unsafe fn destroy_event(&self, device: i32, event: *mut c_void) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.destroy_event?)(device, event) })
    }
    unsafe fn event_elapsed_time(
        &self,
        device: i32,
        start: *mut c_void,
        end: *mut c_void,
        ms: *mut f32,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.event_elapsed_time?)(device, start, end, ms) })
    }
    unsafe fn init_async_info(&self, device: i32, async_info: *mut *mut AsyncInfo) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.init_async_info?)(device, async_info) })
    }
    unsafe fn init_device_info(
        &self,
        device: i32,
        device_info: *mut DeviceInfo,
        err_str: *mut *const c_char,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.init_device_info?)(device, device_info, err_str) })
    }
    unsafe fn init_plugin(&self) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.init_plugin?)() })
    }
    unsafe fn deinit_plugin(&self) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.deinit_plugin?)() })
    }
    unsafe fn deinit_device(&self, device: i32) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.deinit_device?)(device) })
    }
    unsafe fn unload_binary(&self, device: i32, image: *mut DeviceImage) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.unload_binary?)(device, image) })
    }
    unsafe fn register_destruction_cb(
        &self,
        callback: Option<DestructionCallback>,
        data: *mut c_void,
    ) -> Option<()> {
        // SAFETY: the trait's contract, forwarded to the entry.
        unsafe { (self.register_destruction_cb?)(callback, data) };
        Some(())
    }
    unsafe fn last_error_message(&self, buf: *mut c_char, cap: usize) -> Option<usize> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.last_error?)(buf, cap) })
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
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe {
            (self.run_typed_region?)(
                device,
                entry,
                args,
                offsets,
                arg_types,
                num_args,
                num_teams,
                thread_limit,
                loop_tripcount,
                async_info,
            )
        })
    }
    unsafe fn data_delete_batch(&self, device: i32, ptrs: *mut *mut c_void, n: i64) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.data_delete_batch?)(device, ptrs, n) })
    }
    unsafe fn load_binary_flags(
        &self,
        device: i32,
        image: *mut DeviceImage,
        flags: u32,
    ) -> Option<*mut TargetTable> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.load_binary_flags?)(device, image, flags) })
    }
    unsafe fn is_device_compatible(&self, device: i32, image: *mut DeviceImage) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.is_device_compatible?)(device, image) })
    }
    unsafe fn get_device_info(
        &self,
        device: i32,
        key: i32,
        value: *mut c_void,
        cap: usize,
        size: *mut usize,
    ) -> Option<i32> {
        // SAFETY: the trait's contract, forwarded to the entry.
        Some(unsafe { (self.get_device_info?)(device, key, value, cap, size) })
    }
}
