//! What the offload layer needs from devices and plugins, as traits, so that
//! it runs over the real runtime ([`omptarget::device::Device`]) and over test
//! devices alike.
//!
//! * [`DeviceOps`]: one device (LLVM's `DeviceTy` calls into its plugin).
//! * [`Platform`]: the loaded plugins and their devices, in load order
//!   (LLVM's `AllRTLs`). The [`super::Registry`] decides which plugins are
//!   used and numbers their devices as LLVM does.

use omptarget::abi::{AllocKind, AsyncInfo, DeviceImage, OffloadEntry};
use omptarget::device::DevicePtr;
use omptarget::mapping::MappingTable;
use std::any::Any;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

/// Why a device or plugin call failed: the core's typed error, carried
/// as it is, so the OpenMP layer can tell the causes apart (e.g. a pointer
/// the device never allocated from a plugin that refused a free).
pub type OpFailed = omptarget::Error;

/// One device of one plugin.
pub trait DeviceOps: Send + Sync {
    /// Initialise the device once (later calls return the first result):
    /// `__tgt_rtl_init_requires(requires_flags)` if the plugin has it, then
    /// `__tgt_rtl_init_device`.
    fn init(&self, requires_flags: i64) -> Result<(), OpFailed>;
    /// Whether this device can run `image`, which its plugin accepted
    /// (`__tgt_rtl_is_device_compatible`; true without it). Does not
    /// initialise the device.
    ///
    /// # Safety
    /// `image` points to a valid `__tgt_device_image`.
    unsafe fn can_run_image(&self, image: *mut DeviceImage) -> bool {
        let _ = image;
        true
    }
    /// `__tgt_rtl_data_alloc` (through the memory manager where the core
    /// uses one).
    ///
    /// # Safety
    /// `host_ptr` is null or the host address the allocation mirrors (the
    /// program's mapped variable, or a buffer the caller owns), which the
    /// plugin may use.
    unsafe fn alloc(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr, OpFailed>;
    /// `__tgt_rtl_data_delete`.
    ///
    /// # Safety
    /// The caller owns `ptr`'s allocation: no mapping, buffer or queued
    /// operation uses it any more.
    unsafe fn free(&self, ptr: DevicePtr) -> Result<(), OpFailed>;
    /// `__tgt_rtl_data_submit`: host -> device.
    ///
    /// # Safety
    /// `src..src+size` is readable host memory; `dst` is device memory of
    /// this device.
    unsafe fn submit(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
    ) -> Result<(), OpFailed>;
    /// `__tgt_rtl_data_retrieve`: device -> host.
    ///
    /// # Safety
    /// `dst..dst+size` is writable host memory; `src` is device memory of
    /// this device.
    unsafe fn retrieve(
        &self,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed>;
    /// `__tgt_rtl_data_retrieve_async` on `queue`: the copy is complete
    /// once [`DeviceOps::synchronize_queue`] returns. By default the
    /// blocking [`DeviceOps::retrieve`] (a fully ordered queue).
    ///
    /// # Safety
    /// As [`DeviceOps::retrieve`], and `dst..dst+size` stays writable and
    /// unread by the host until the queue is synchronised.
    unsafe fn retrieve_queued(
        &self,
        queue: &mut AsyncInfo,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        let _ = queue;
        // SAFETY: per this function's contract.
        unsafe { self.retrieve(dst, src, size) }
    }
    /// Wait for everything on `queue` and give it back to the plugin; by
    /// default there is nothing to wait for.
    ///
    /// # Safety
    /// `queue` is empty (a null `queue`) or holds a queue this device's
    /// plugin set and that was not synchronised since
    /// (`omptarget::device::Device::synchronize_queue`): the plugin uses
    /// it as its own.
    unsafe fn synchronize_queue(&self, queue: &mut AsyncInfo) -> Result<(), OpFailed> {
        let _ = queue;
        Ok(())
    }
    /// LLVM's `isDataExchangable`: `dst` is a device of the same plugin,
    /// which exports `is_data_exchangable` (saying yes for the pair) and a
    /// `data_exchange` entry.
    fn is_data_exchangable(&self, dst: &dyn DeviceOps) -> bool;
    /// `__tgt_rtl_data_exchange(this, src, dst's id, dst, size)`.
    ///
    /// # Safety
    /// `src` is device memory of this device, `dst` of `dst_device`.
    unsafe fn data_exchange(
        &self,
        src: DevicePtr,
        dst_device: &dyn DeviceOps,
        dst: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed>;
    /// `__tgt_rtl_load_binary`: the target table's entries, in image order.
    /// `storage` owns what `image` points into: the device keeps it alive
    /// for as long as the image is loaded (or its plugin may use it).
    /// Called holding no lock of the offload layer's (the plugin may take
    /// the dynamic loader's lock).
    ///
    /// # Safety
    /// `image` points into `storage`.
    unsafe fn load_binary(
        &self,
        image: *mut DeviceImage,
        storage: Arc<dyn Any + Send + Sync>,
    ) -> Result<Vec<OffloadEntry>, OpFailed>;
    /// `__tgt_rtl_unload_binary`: unload an image `load_binary` loaded, when
    /// its binary is unregistered. `Ok(false)`: the plugin cannot unload
    /// images (LLVM's plugins), so it stays loaded until shutdown.
    ///
    /// Called holding no lock of the offload layer's.
    ///
    /// # Safety
    /// `image` was loaded on this device by [`DeviceOps::load_binary`].
    unsafe fn unload_binary(&self, image: *mut DeviceImage) -> Result<bool, OpFailed>;
    /// The binary of `image` (loaded here) was unregistered and its
    /// destructor kernels ran: `ran` succeeded, `failed` failed. The core
    /// lists them with the image in the shutdown report; others ignore it.
    fn note_dtor_kernels(&self, image: *mut DeviceImage, ran: usize, failed: usize) {
        let _ = (image, ran, failed);
    }
    /// `__tgt_rtl_run_target_region`.
    ///
    /// # Safety
    /// `entry` is an entry address of a loaded table; `args`/`offsets` are
    /// what the kernel expects.
    unsafe fn run_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
    ) -> Result<(), OpFailed>;
    /// `__tgt_rtl_run_target_team_region`.
    ///
    /// # Safety
    /// As [`DeviceOps::run_region`].
    unsafe fn run_team_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
    ) -> Result<(), OpFailed>;
    /// `__tgt_rtl_supports_empty_images() > 0`.
    fn supports_empty_images(&self) -> bool;
    /// The device's host->device mapping table.
    fn mappings(&self) -> &MappingTable;
    /// For implementations that need the concrete type of another device
    /// (`data_exchange`).
    fn as_any(&self) -> &dyn std::any::Any;
    /// What LLVM's plugin reports as the device's kind to an OMPT tool
    /// (`getComputeUnitKind`): `generic-64bit` for a host device.
    fn compute_unit_kind(&self) -> &'static CStr {
        c"generic-64bit"
    }
}

/// The loaded plugins, in load order, and their devices.
pub trait Platform: Sync {
    /// Number of plugins that loaded (with or without devices).
    fn plugin_count(&self) -> usize;
    /// `__tgt_rtl_number_of_devices` of a plugin.
    fn plugin_device_count(&self, plugin: usize) -> usize;
    /// The plugin library's file name (`libomptarget.rtl.x86_64.so`), if
    /// it has one.
    fn plugin_name(&self, _plugin: usize) -> Option<&str> {
        None
    }
    /// `__tgt_rtl_is_valid_binary`.
    ///
    /// # Safety
    /// `image` points to a valid device image.
    unsafe fn is_valid_binary(&self, plugin: usize, image: *mut DeviceImage) -> bool;
    /// Whether the plugin's devices also take images an earlier plugin
    /// took (remote devices, which run the local plugins' images);
    /// otherwise an image goes to the first plugin accepting it, as LLVM's.
    fn plugin_shares_images(&self, _plugin: usize) -> bool {
        false
    }
    /// Device `local` (0-based, the plugin's own numbering) of a plugin.
    fn device(&self, plugin: usize, local: usize) -> Option<&dyn DeviceOps>;
}

/// No plugins at all: for a process whose runtime is not built (no binary
/// registered yet, or offloading disabled), where LLVM has no devices.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmptyPlatform;

impl Platform for EmptyPlatform {
    fn plugin_count(&self) -> usize {
        0
    }
    fn plugin_device_count(&self, _plugin: usize) -> usize {
        0
    }
    unsafe fn is_valid_binary(&self, _plugin: usize, _image: *mut DeviceImage) -> bool {
        false
    }
    fn device(&self, _plugin: usize, _local: usize) -> Option<&dyn DeviceOps> {
        None
    }
}

/// [`DeviceOps`] over the core's [`omptarget::device::Device`]: every call goes
/// through the device's own API (memory manager, liveness checks, the
/// plugin's async entries on a private queue, then a wait).
impl DeviceOps for omptarget::device::Device {
    fn init(&self, requires_flags: i64) -> Result<(), OpFailed> {
        self.ensure_initialized_with_requires(requires_flags)
    }
    unsafe fn can_run_image(&self, image: *mut DeviceImage) -> bool {
        // SAFETY: this trait's contract for `can_run_image`.
        unsafe { omptarget::device::Device::can_run_image(self, image) }
    }
    unsafe fn alloc(
        &self,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr, OpFailed> {
        // SAFETY: this trait's contract for `alloc`.
        unsafe { omptarget::device::Device::alloc(self, size, host_ptr, kind) }
    }
    unsafe fn free(&self, ptr: DevicePtr) -> Result<(), OpFailed> {
        // SAFETY: the caller owns the allocation (this trait's contract).
        unsafe { omptarget::device::Device::free(self, ptr) }
    }
    unsafe fn submit(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety` for `submit`: `src..src+size` is
        // readable host memory and `dst` device memory of this device,
        // which is `Device::submit`'s contract.
        unsafe { omptarget::device::Device::submit(self, dst, src, size) }
    }
    unsafe fn retrieve(
        &self,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety` for `retrieve`: `dst..dst+size` is
        // writable host memory and `src` device memory of this device, which
        // is `Device::retrieve`'s contract.
        unsafe { omptarget::device::Device::retrieve(self, dst, src, size) }
    }
    unsafe fn retrieve_queued(
        &self,
        queue: &mut AsyncInfo,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety` for `retrieve_queued`, which is
        // `Device::retrieve_on`'s contract.
        unsafe { omptarget::device::Device::retrieve_on(self, queue, dst, src, size) }
    }
    unsafe fn synchronize_queue(&self, queue: &mut AsyncInfo) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety`, which is the device's.
        unsafe { omptarget::device::Device::synchronize_queue(self, queue) }
    }
    fn is_data_exchangable(&self, dst: &dyn DeviceOps) -> bool {
        dst.as_any()
            .downcast_ref::<omptarget::device::Device>()
            .is_some_and(|dst| self.can_exchange_with(dst))
    }
    unsafe fn data_exchange(
        &self,
        src: DevicePtr,
        dst_device: &dyn DeviceOps,
        dst: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        let Some(dst_device) = dst_device
            .as_any()
            .downcast_ref::<omptarget::device::Device>()
        else {
            return Err(omptarget::Error::InvalidArgument(
                "data exchange with a foreign device".to_string(),
            ));
        };
        // SAFETY: the trait's `# Safety` for `data_exchange`: `src` is
        // device memory of this device and `dst` of `dst_device` (the same
        // device, downcast), which is `Device::exchange`'s contract.
        unsafe { self.exchange(src, dst_device, dst, size) }
    }
    unsafe fn load_binary(
        &self,
        image: *mut DeviceImage,
        storage: Arc<dyn Any + Send + Sync>,
    ) -> Result<Vec<OffloadEntry>, OpFailed> {
        // `load_image_kept`, not `load_image_bind_now`: clang's images are
        // loaded as LLVM's runtime loads them, symbols bound lazily by our
        // host plugin as by LLVM's (docs/openmp.md, "Loading images").
        // SAFETY: the trait's `# Safety` for `load_binary`: `image` points
        // into `storage`, which the device keeps alive while it is loaded.
        Ok(unsafe { self.load_image_kept(image, Some(storage)) }?.entries)
    }
    unsafe fn unload_binary(&self, image: *mut DeviceImage) -> Result<bool, OpFailed> {
        // SAFETY: the trait's `# Safety` for `unload_binary`: `image` was
        // loaded on this device by `load_binary`, i.e. by `load_image_kept`.
        unsafe { self.unload_image(image) }
    }
    fn note_dtor_kernels(&self, image: *mut DeviceImage, ran: usize, failed: usize) {
        omptarget::device::Device::note_dtor_kernels(self, image, ran, failed);
    }
    unsafe fn run_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety` for `run_region`: `entry` is an
        // entry of a table loaded on this device and `args`/`offsets` are
        // what that kernel expects.
        unsafe {
            omptarget::device::Device::run_region(
                self,
                entry,
                args,
                offsets,
                omptarget::RegionLaunch::Single,
            )
        }
    }
    unsafe fn run_team_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety` for `run_team_region` (as
        // `run_region`): `entry` is an entry of a table loaded on this
        // device and `args`/`offsets` are what that kernel expects.
        unsafe {
            omptarget::device::Device::run_region(
                self,
                entry,
                args,
                offsets,
                omptarget::RegionLaunch::Teams {
                    num_teams,
                    thread_limit,
                    loop_tripcount,
                },
            )
        }
    }
    fn supports_empty_images(&self) -> bool {
        self.plugin().supports_empty_images()
    }
    fn mappings(&self) -> &MappingTable {
        omptarget::device::Device::mappings(self)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn compute_unit_kind(&self) -> &'static CStr {
        compute_unit_kind_of(omptarget::device::Device::kind(self))
    }
}

/// The OMPT `device_initialize` kind string for a device of `kind`. LLVM's
/// CUDA and AMDGPU plugins name the architecture (`sm_90`, `gfx90a`),
/// which our plugins' entry table cannot tell: the device's kind, as its
/// plugin reports it ([`omptarget::DeviceKind`]), stands in for it; a
/// plugin that reports none (LLVM's own) is a generic one.
fn compute_unit_kind_of(kind: Option<omptarget::DeviceKind>) -> &'static CStr {
    match kind {
        Some(omptarget::DeviceKind::CudaGpu) => c"cuda",
        _ => c"generic-64bit",
    }
}

/// The runtime's plugins in load order (LLVM's `AllRTLs` once those without
/// devices are left out, which the registry does) and their devices.
impl Platform for omptarget::Runtime {
    fn plugin_count(&self) -> usize {
        omptarget::Runtime::plugin_count(self)
    }
    fn plugin_device_count(&self, plugin: usize) -> usize {
        self.plugin(plugin).map_or(0, |p| p.device_count())
    }
    fn plugin_name(&self, plugin: usize) -> Option<&str> {
        self.plugin(plugin).map(|p| p.name())
    }
    /// Remote devices (their plugin reports where they are) run the local
    /// plugins' images: their servers load each image into their own
    /// plugins. Asked of the devices, not read from the file name.
    fn plugin_shares_images(&self, plugin: usize) -> bool {
        self.plugin_device(plugin, 0)
            .is_some_and(|device| device.is_remote())
    }
    unsafe fn is_valid_binary(&self, plugin: usize, image: *mut DeviceImage) -> bool {
        self.plugin(plugin)
            // SAFETY: our `# Safety`: `image` points to a valid device image.
            .is_some_and(|p| unsafe { p.is_valid_binary(image) })
    }
    fn device(&self, plugin: usize, local: usize) -> Option<&dyn DeviceOps> {
        self.plugin_device(plugin, local)
            .map(|d| d as &dyn DeviceOps)
    }
}

/// A platform built on first use (the shim's session builds its runtime
/// at the first registration): no plugins until it is built, then its
/// plugins. Read at every call, so an [`crate::Offload`] made before
/// another thread built the runtime sees its devices as soon as the
/// registry numbers them (they are numbered only after the runtime is
/// built, so a number the registry gives always has its device here).
impl<P: Platform + Send> Platform for std::sync::OnceLock<P> {
    fn plugin_count(&self) -> usize {
        self.get().map_or(0, Platform::plugin_count)
    }
    fn plugin_device_count(&self, plugin: usize) -> usize {
        self.get()
            .map_or(0, |platform| platform.plugin_device_count(plugin))
    }
    fn plugin_name(&self, plugin: usize) -> Option<&str> {
        self.get()?.plugin_name(plugin)
    }
    unsafe fn is_valid_binary(&self, plugin: usize, image: *mut DeviceImage) -> bool {
        // SAFETY: our `# Safety` is the callee's.
        self.get()
            .is_some_and(|platform| unsafe { platform.is_valid_binary(plugin, image) })
    }
    fn plugin_shares_images(&self, plugin: usize) -> bool {
        self.get()
            .is_some_and(|platform| platform.plugin_shares_images(plugin))
    }
    #[inline]
    fn device(&self, plugin: usize, local: usize) -> Option<&dyn DeviceOps> {
        self.get()?.device(plugin, local)
    }
}

#[cfg(test)]
mod tests {
    use super::compute_unit_kind_of;
    use omptarget::DeviceKind;

    #[test]
    fn the_compute_unit_kind_follows_the_reported_device_kind() {
        assert_eq!(compute_unit_kind_of(Some(DeviceKind::CudaGpu)), c"cuda");
        assert_eq!(
            compute_unit_kind_of(Some(DeviceKind::HostCpu)),
            c"generic-64bit"
        );
        assert_eq!(compute_unit_kind_of(None), c"generic-64bit");
    }
}
