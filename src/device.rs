//! A device: one device of one plugin, initialised lazily on first use.
//!
//! The device owns its memory manager, the table of its live allocations,
//! the images loaded on it and its mapping table. Its raw operations
//! (`alloc`, `submit`, `load_image`, `run_region` …) are what the Rust API
//! and the OpenMP layer (`omptarget-openmp`) build on; each initialises the
//! device on first use and fails cleanly once the plugin is gone.
mod allocator;
pub(crate) mod images;
pub(crate) mod plugin_op;
mod properties;
pub(crate) mod queue_ops;
pub(crate) mod table;
mod teardown;

use crate::memory::MemoryManager;
use crate::plugin::Plugin;
use crate::{abi, Error, Result};
use allocator::PluginAllocator;
use images::ImageRecord;
pub(crate) use plugin_op::PluginOp;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::memory::{LiveAllocation, MemoryStats};
pub use images::LoadedImage;
pub use properties::{DeviceKind, DeviceProperties};

/// An address in a device's memory space (opaque to the host).
///
/// A plain number: making one is safe ([`DevicePtr::from_raw`]), and every
/// operation that treats it as memory ([`Device::free`], [`Device::submit`]
/// ...) is `unsafe`, with the caller vouching that it owns the memory. The
/// typed API's handles ([`crate::DeviceBuffer`]) own theirs and never hand
/// them to safe code that could free or alias them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(*mut c_void);
// SAFETY: a device address is a number; the runtime never dereferences it,
// so moving it between threads is moving an integer.
unsafe impl Send for DevicePtr {}
// SAFETY: as for Send: shared access only reads the integer.
unsafe impl Sync for DevicePtr {}

impl DevicePtr {
    /// The device address `ptr`.
    pub const fn from_raw(ptr: *mut c_void) -> Self {
        DevicePtr(ptr)
    }

    /// The address as a pointer (never dereference it on the host).
    pub const fn as_ptr(self) -> *mut c_void {
        self.0
    }

    /// The address as an integer.
    pub fn addr(self) -> usize {
        self.0 as usize
    }
}

/// One device. Owned by the [`crate::Runtime`]; users borrow it.
pub struct Device {
    id: usize,
    /// The plugin's own number for this device.
    local_id: i32,
    plugin: Arc<Plugin>,
    /// Set once by the first use: `Err` keeps the reason init failed.
    init: OnceLock<std::result::Result<(), String>>,
    /// The caching allocator, which is also the table of every allocation
    /// handed out and not yet freed.
    memory: MemoryManager<PluginAllocator>,
    /// Images loaded on the device, in load order.
    images: Mutex<Vec<ImageRecord>>,
    mappings: crate::mapping::MappingTable,
    /// What each allocation records about where it was made.
    origins: crate::origin::OriginCapture,
    /// The runtime it belongs to (unique per `Runtime::new`): two
    /// runtimes both have a device 0, and one's buffers are not the
    /// other's.
    runtime: u64,
    /// The typed API's live [`crate::Queue`]s (their boxed plugin queues):
    /// the teardown synchronises and frees one never dropped.
    queues: Mutex<Vec<queue_ops::QueuePtr>>,
    /// What one typed launch runs at most, read from the plugin once.
    launch_limits: OnceLock<properties::LaunchLimits>,
    /// Where the device is, asked once ([`Device::location`]).
    location: OnceLock<Option<String>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.id)
            .field("plugin", &self.plugin.name())
            .field("local_id", &self.local_id)
            .field("initialized", &self.init.get())
            .finish_non_exhaustive()
    }
}

impl Device {
    pub(crate) fn new(
        id: usize,
        plugin: Arc<Plugin>,
        local_id: i32,
        threshold: usize,
        origins: crate::origin::OriginCapture,
        runtime: u64,
    ) -> Device {
        let allocator = PluginAllocator::new(plugin.clone(), id, local_id);
        Device {
            id,
            local_id,
            plugin,
            init: OnceLock::new(),
            memory: MemoryManager::new(allocator, threshold),
            images: Mutex::new(Vec::new()),
            mappings: Default::default(),
            origins,
            runtime,
            queues: Mutex::new(Vec::new()),
            launch_limits: OnceLock::new(),
            location: OnceLock::new(),
        }
    }

    /// Whether `other` is a device of the same runtime.
    pub(crate) fn same_runtime(&self, other: &Device) -> bool {
        self.runtime == other.runtime
    }

    /// The runtime-wide device number (0-based, in plugin order).
    pub fn id(&self) -> usize {
        self.id
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The plugin's own number for this device (`RTLDeviceID`).
    pub fn local_id(&self) -> i32 {
        self.local_id
    }

    /// Name of the plugin serving this device.
    pub fn plugin_name(&self) -> &str {
        self.plugin.name()
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The plugin serving this device.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Initialise the device (idempotent; thread-safe). A failure is
    /// remembered and returned again on every later call.
    #[inline]
    pub fn ensure_initialized(&self) -> Result<()> {
        // Every operation asks: the answer once initialised stays inline
        // (one load and compare); the first call and a failure go out of line.
        if let Some(Ok(())) = self.init.get() {
            return Ok(());
        }
        self.initialize_once()
    }

    #[cold]
    fn initialize_once(&self) -> Result<()> {
        match self.init.get_or_init(|| self.initialize()) {
            Ok(()) => Ok(()),
            Err(reason) => Err(Error::DeviceInitFailed {
                device: self.id,
                plugin: self.plugin.name().to_owned(),
                reason: reason.clone(),
            }),
        }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// [`Device::ensure_initialized`], first recording the program's
    /// `requires` flags for `init_requires`. The flags are plugin-wide (like
    /// LLVM's global `RequiresFlags`) and only matter before the first
    /// initialisation of each device.
    pub fn ensure_initialized_with_requires(&self, requires_flags: i64) -> Result<()> {
        if self.init.get().is_none() {
            self.plugin.set_requires_flags(requires_flags);
        }
        self.ensure_initialized()
    }

    /// True once the device was initialised successfully.
    pub fn is_initialized(&self) -> bool {
        matches!(self.init.get(), Some(Ok(())))
    }

    fn initialize(&self) -> std::result::Result<(), String> {
        let requires = self.plugin.requires_flags();
        let code = self
            .plugin
            .call(|e| {
                // SAFETY: plain value argument; the plugin is callable.
                // Not exported: nothing to pass.
                let _ = unsafe { e.init_requires(requires) };
                // SAFETY: `local_id` < the plugin's device count.
                unsafe { e.init_device(self.local_id) }
            })
            .map_err(|e| e.to_string())?;
        if code == abi::OFFLOAD_SUCCESS {
            tracing::debug!(plugin = %self.plugin.name(), device = self.id, "device initialised");
            Ok(())
        } else {
            tracing::warn!(plugin = %self.plugin.name(), device = self.id, code, "init_device failed");
            Err(format!("init_device returned {code}"))
        }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Allocate device memory, through the memory manager (which caches
    /// small `Default`/`Device` blocks). Zero bytes is an error. The memory
    /// belongs to the caller until [`Device::free`] (or the shutdown, which
    /// reports it as leaked).
    ///
    /// The allocation records where it was made (`#[track_caller]`, or the
    /// program's return address: [`crate::Config::alloc_origins`]) for the
    /// leak report.
    ///
    /// # Safety
    /// `host_ptr` is null or the host address the allocation will mirror
    /// (LLVM's `HstPtrBegin`): the plugin may use it, for `AllocKind::Host`
    /// or `Shared` memory in particular.
    #[track_caller]
    pub unsafe fn alloc(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: abi::AllocKind,
    ) -> Result<DevicePtr> {
        let origin =
            crate::origin::AllocOrigin::capture(self.origins, std::panic::Location::caller());
        let _span = crate::profile::span(crate::profile::Kind::Alloc, "alloc")
            .map(|s| s.device(self.id).bytes(size));
        self.ensure_initialized()?;
        let ptr = self.memory.allocate_from(size, host_ptr, kind, origin)?;
        tracing::debug!(plugin = %self.plugin.name(), device = self.id, size, ?kind, ptr = ?ptr.as_ptr(), "alloc");
        Ok(ptr)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Free memory returned by [`Device::alloc`]; unknown pointers (never
    /// allocated here, or already freed) are an error and change nothing.
    /// If the plugin fails to free, the allocation stays live.
    ///
    /// # Safety
    /// The caller owns `ptr`'s allocation: no handle (a
    /// [`crate::DeviceBuffer`], a mapping of the OpenMP layer) and no queued
    /// operation uses it any more. Freed memory is reused by later
    /// allocations, so a stale user would read and write someone else's.
    pub unsafe fn free(&self, ptr: DevicePtr) -> Result<()> {
        // SAFETY: our contract.
        unsafe { self.free_sized(ptr, None) }
    }

    #[doc(hidden)]
    /// [`Device::free`], only if the live allocation at `ptr` is of `size`
    /// bytes (`None`: any size); else [`crate::Error::UnknownDevicePointer`]
    /// and nothing changes. For a caller that recorded the size it was
    /// given (liboffload's `olMemFree`): one lookup, and a block of another
    /// size that took the address since is never freed for it.
    ///
    /// # Safety
    /// As [`Device::free`].
    pub unsafe fn free_sized(&self, ptr: DevicePtr, size: Option<usize>) -> Result<()> {
        let mut span =
            crate::profile::span(crate::profile::Kind::Free, "free").map(|s| s.device(self.id));
        let allocation = self.memory.free_sized(ptr, size)?;
        if let Some(span) = span.as_mut() {
            span.set_bytes(allocation.size);
        }
        tracing::debug!(plugin = %self.plugin.name(), device = self.id, ptr = ?ptr.as_ptr(), size = allocation.size, "free");
        Ok(())
    }

    /// The allocation at `ptr`, if it is live.
    pub fn allocation(&self, ptr: DevicePtr) -> Option<LiveAllocation> {
        self.memory.allocation(ptr)
    }

    /// Number and total bytes of the live allocations.
    pub fn live_allocations(&self) -> (usize, usize) {
        self.memory.live_allocations()
    }

    /// What the memory manager holds.
    pub fn memory_stats(&self) -> MemoryStats {
        self.memory.stats()
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Copy `size` bytes host -> device.
    ///
    /// # Safety
    /// `src` is readable for `size` bytes; `dst..dst+size` is device memory.
    pub unsafe fn submit(&self, dst: DevicePtr, src: *const c_void, size: usize) -> Result<()> {
        let _span = crate::profile::span(crate::profile::Kind::TransferToDevice, "submit")
            .map(|s| s.device(self.id).bytes(size));
        self.ensure_initialized()?;
        let size64 = to_i64(size)?;
        let local = self.local_id;
        let src = src as *mut c_void;
        let op = PluginOp::Submit {
            device: local,
            dst: dst.0,
            src,
            size: size64,
        };
        let exported = self.plugin.exported();
        let code = self.plugin.call(|e| {
            let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_submit");
            // SAFETY: per this function's contract.
            unsafe { op.run_and_wait(e, exported) }
        })?;
        self.check("data_submit", code)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Copy `size` bytes device -> host.
    ///
    /// # Safety
    /// `dst` is writable for `size` bytes; `src..src+size` is device memory.
    pub unsafe fn retrieve(&self, dst: *mut c_void, src: DevicePtr, size: usize) -> Result<()> {
        let _span = crate::profile::span(crate::profile::Kind::TransferFromDevice, "retrieve")
            .map(|s| s.device(self.id).bytes(size));
        self.ensure_initialized()?;
        let size64 = to_i64(size)?;
        let local = self.local_id;
        let op = PluginOp::Retrieve {
            device: local,
            dst,
            src: src.0,
            size: size64,
        };
        let exported = self.plugin.exported();
        let code = self.plugin.call(|e| {
            let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_retrieve");
            // SAFETY: per this function's contract.
            unsafe { op.run_and_wait(e, exported) }
        })?;
        self.check("data_retrieve", code)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// True when this device can copy straight to `dst` (same plugin, which
    /// exports `is_data_exchangable` and says yes, and a data_exchange entry).
    pub fn can_exchange_with(&self, dst: &Device) -> bool {
        if !Arc::ptr_eq(&self.plugin, &dst.plugin) {
            return false;
        }
        let (src_id, dst_id) = (self.local_id, dst.local_id);
        self.plugin
            .call(|e| {
                use crate::abi::plugin::OptionalEntry::{DataExchange, DataExchangeAsync};
                // SAFETY: two valid device numbers of this plugin.
                let yes = unsafe { e.is_data_exchangable(src_id, dst_id) }.is_some_and(|y| y != 0);
                yes && (e.exports(DataExchange) || e.exports(DataExchangeAsync))
            })
            .unwrap_or(false)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Copy `size` bytes from this device's `src` to `dst_device`'s `dst`
    /// without going through the host.
    ///
    /// # Safety
    /// Both ranges are device memory of their devices, `size` bytes long.
    pub unsafe fn exchange(
        &self,
        src: DevicePtr,
        dst_device: &Device,
        dst: DevicePtr,
        size: usize,
    ) -> Result<()> {
        let _span = crate::profile::span(crate::profile::Kind::TransferDeviceToDevice, "exchange")
            .map(|s| s.device(self.id).bytes(size));
        self.ensure_initialized()?;
        dst_device.ensure_initialized()?;
        if !self.can_exchange_with(dst_device) {
            return Err(Error::Unsupported {
                plugin: self.plugin.name().to_owned(),
                what: "data exchange between these devices",
            });
        }
        let size64 = to_i64(size)?;
        let (src_id, dst_id) = (self.local_id, dst_device.local_id);
        let op = PluginOp::Exchange {
            src_device: src_id,
            src: src.0,
            dst_device: dst_id,
            dst: dst.0,
            size: size64,
        };
        let exported = self.plugin.exported();
        let code = self.plugin.call(|e| {
            let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_exchange");
            // SAFETY: per this function's contract.
            unsafe { op.run_and_wait(e, exported) }
        })?;
        self.check("data_exchange", code)
    }

    /// Wait until every operation started on this device has completed.
    ///
    /// Every raw operation of the runtime is synchronous (with an
    /// async-capable plugin it runs on a private queue and waits for it
    /// before returning), so at this point there is nothing in flight; this
    /// checks that the device is initialised and its plugin still alive,
    /// and is the barrier API users write where ordering matters.
    pub fn synchronize(&self) -> Result<()> {
        self.ensure_initialized()?;
        self.plugin.call(|_| ())
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// The per-device host->device mapping table.
    pub fn mappings(&self) -> &crate::mapping::MappingTable {
        &self.mappings
    }

    /// A plugin return code as a result.
    pub(crate) fn check(&self, entry: &'static str, code: i32) -> Result<()> {
        check_code(&self.plugin, self.id, entry, code)
    }
}

// Written with the plugin, whose calls it checks (`get_device_info`
// there); the device's entries use it from here too.
pub(crate) use crate::plugin::check_code;

/// Run `op` on a fresh `__tgt_async_info` queue, then `synchronize` it (which
/// also releases the queue). Returns the first failure code.
pub(crate) fn with_queue(
    device: i32,
    plugin: &dyn abi::plugin::PluginCalls,
    op: impl FnOnce(*mut abi::AsyncInfo) -> i32,
) -> i32 {
    let mut queue = abi::AsyncInfo {
        queue: std::ptr::null_mut(),
    };
    let code = op(&mut queue);
    if queue.queue.is_null() {
        return code;
    }
    // SAFETY: `queue` was filled in by the plugin for this device (with an
    // `_async` entry: the caller checked it has `synchronize` too).
    let sync_code = unsafe { plugin.synchronize(device, &mut queue) }.unwrap_or(abi::OFFLOAD_FAIL);
    if code != abi::OFFLOAD_SUCCESS {
        code
    } else {
        sync_code
    }
}

/// A byte count as the plugin ABI's `int64_t`.
pub(crate) fn to_i64(size: usize) -> Result<i64> {
    i64::try_from(size).map_err(|_| Error::InvalidArgument(format!("size {size} exceeds i64")))
}
