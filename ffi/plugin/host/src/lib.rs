//! The host backend: runs x86_64 ELF offload images in-process, like LLVM
//! 14's generic-elf-64bit plugin.
//!
//! [`HostBackend`] implements the plugin kit's [`Backend`]
//! (`omptarget-plugin-kit`, which names no backend). This crate is a library
//! only: `ffi/plugin/host/rtl` exports it as `libomptarget.rtl.x86_64.so`,
//! and the test plugins wrap it. It exports no C symbol itself, so that
//! each of those can export the `__tgt_rtl_*` entries without clashing.
//!
//! * A valid image is an ELF64 little-endian `EM_X86_64` `ET_DYN` file.
//! * Each `load_binary` dlopens its own copy of the image: from an
//!   anonymous memfd through `/proc/self/fd` by default, or from a private
//!   temporary file where that fails or `OMPTARGET_HOST_IMAGE_DIR` asks for
//!   files (see [`image`]), so devices never share the image's globals.
//!   If the memfd fails, the error of the file fallback names both causes;
//!   `OMPTARGET_HOST_KEEP_IMAGE_FILES` loads from files kept until the
//!   image is unloaded, for tools that read symbols by path. Every host
//!   entry is resolved by name, never by index (`declare target link`
//!   variables have no device entry): through the image's own
//!   `omp_offloading_entries` table when it has one (clang's OpenMP
//!   images; this also finds hidden-visibility globals), else with dlsym.
//!   Symbols the image references are bound lazily (`RTLD_LAZY`, as
//!   LLVM's host plugins load), or all at load for `load_binary_flags`
//!   with `BIND_NOW` (`RTLD_NOW`: an image referencing a symbol nothing
//!   defines is refused before its constructors run; see [`image`]).
//!   An OpenMP runtime an image brings in (libgomp for a GCC `-fopenmp`
//!   kernel) stays loaded for the process: its threads outlive the image.
//! * Loading the same image twice on one device is allowed and loads a
//!   second, independent copy (as LLVM 14's plugin does); `unload_binary`
//!   unloads the most recent copy of that image.
//! * Device memory is `malloc`ed host memory for every allocation kind;
//!   submit/retrieve/exchange are memory copies. A copy into a read-only
//!   part of a loaded image (a `const` global) is refused, not made (it
//!   would fault), and the target table marks such globals
//!   `device_entry::READ_ONLY` ([`image`]).
//! * Kernels are called with any number of pointer-sized arguments:
//!   directly up to 16, through libffi beyond that and for typed arguments
//!   ([`launch`]); a team region is the same call (the image's code forks
//!   its own teams through libomp). A typed launch (`run_typed_region`)
//!   of more than one team or thread is refused ([`info::check_launch`]):
//!   it would run once all the same. Every launch checks its entry against
//!   the device's loaded images, which sit in a `ReadMostly` (the kit's
//!   `state_lock`): launches of several threads write no common cache
//!   line; loads, unloads and the fork handler take the write side.
//! * It reports 4 devices, like LLVM 14's plugin (`OMPTARGET_HOST_DEVICES`).
//! * `deinit_device` unloads the device's images and frees the memory the
//!   runtime left; `deinit` does so for every device.
//!
//! # Module map
//!
//! * [`config`]: the settings and their variables (`OMPTARGET_HOST_DEVICES`,
//!   `OMPTARGET_HOST_IMAGE_DIR`, `OMPTARGET_HOST_KEEP_IMAGE_FILES`).
//! * [`elf`]: the checks a valid image passes.
//! * [`image`]: one image loaded on one device (its private copy, the
//!   dlopen handle, the target table returned to the runtime).
//! * [`image_memfd`]: loading from an anonymous memfd, the default.
//! * [`image_file`]: the private file an image is loaded from otherwise.
//! * [`info`]: what `__tgt_rtl_get_device_info` reports (the CPU's name,
//!   the machine's memory, one team of one thread per launch).
//! * [`launch`]: calling a kernel, directly or through libffi.
//! * [`memory`]: device memory, `malloc`ed blocks tracked per device.
//!
//! The plugin contract this backend serves, and the kit it is built on:
//! `docs/plugins.md`.

pub mod config;
pub mod elf;
pub mod exit_hook;
pub mod image;
pub mod image_file;
pub mod image_memfd;
pub mod info;
pub mod launch;
pub mod memory;

use config::HostConfig;
use image::{ImageStorage, LoadedImage};
use memory::Allocations;
use omptarget_abi::plugin::{device_kind, DeviceInfoKey};
use omptarget_abi::{AllocKind, DeviceImage, TargetTable};
use omptarget_plugin_kit::backend::{
    Backend, DeviceId, DeviceInfoValue, ImageRef, InitCause, LoadOptions, TeamConfig,
};
use omptarget_plugin_kit::diagnostics;
use omptarget_plugin_kit::error::{PluginError, Result};
use omptarget_plugin_kit::fork::ForkLocks;
use omptarget_plugin_kit::state_lock::{self, ReadMostly};
use std::ffi::c_void;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The host backend; see the module docs.
pub struct HostBackend {
    name: &'static str,
    devices: Box<[HostDevice]>,
    image_dir: PathBuf,
    keep_image_files: bool,
    memfd_images: bool,
}

/// One device: its loaded images (in load order) and its memory.
struct HostDevice {
    /// Read by every launch (`check_kernel`), written by image loads and
    /// unloads: a [`ReadMostly`], so launches of different threads write
    /// no common cache line (a `Mutex` here was the per-device lock every
    /// launch of every thread took).
    images: ReadMostly<Vec<LoadedImage>>,
    memory: Mutex<Allocations>,
}

impl Default for HostDevice {
    fn default() -> Self {
        Self {
            images: ReadMostly::new(Vec::new()),
            memory: Mutex::default(),
        }
    }
}

/// Where a loaded image came from, for the debug line.
fn image_origin(loaded: &LoadedImage) -> String {
    match loaded.file_path() {
        _ if loaded.from_memory() => "memory (memfd)".into(),
        Some(path) => path.display().to_string(),
        None => "a file, removed".into(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HostDevice {
    /// Free the memory and unload the images; report leftovers.
    fn release(&self, plugin: &str, device: usize) -> Result<()> {
        let (blocks, bytes) = lock(&self.memory).free_all();
        if blocks > 0 {
            diagnostics::debug(
                plugin,
                &format_args!(
                    "device {device}: freed {blocks} block(s), {bytes} bytes, left allocated"
                ),
            );
        }
        let images = std::mem::take(&mut *self.images.write());
        let mut result = Ok(());
        // Newest first, the reverse of loading.
        for image in images.into_iter().rev() {
            if let Err(e) = image.unload() {
                result = Err(e);
            }
        }
        result
    }
}

impl HostBackend {
    /// `entry` is a kernel of an image loaded on `device`. Checked under
    /// the image lock; the kernel is then called without it, so kernels
    /// run concurrently.
    fn check_kernel(&self, device: DeviceId, entry: NonNull<c_void>) -> Result<()> {
        let known = state_lock::read(&self.device(device).images)
            .iter()
            .any(|image| image.has_kernel(entry.as_ptr()));
        if known {
            Ok(())
        } else {
            Err(PluginError::InvalidArgument(format!(
                "{entry:p} is not a kernel of an image loaded on device {device}"
            )))
        }
    }

    /// The `size` bytes at `dst` may be copied into: none of them lies in
    /// a read-only part of an image loaded on `device` (a `const` global,
    /// `target update to` one or `Global::write`). The copy would fault
    /// there (SIGSEGV, the end of the process, as with LLVM's plugin),
    /// so it is refused instead. Checked under the image lock, like a
    /// launch's kernel.
    fn check_writable(&self, device: DeviceId, dst: NonNull<c_void>, size: usize) -> Result<()> {
        let start = dst.as_ptr() as usize;
        let read_only = state_lock::read(&self.device(device).images)
            .iter()
            .any(|image| image.overlaps_read_only(start, size));
        if read_only {
            Err(PluginError::InvalidArgument(format!(
                "cannot copy {size} bytes to {dst:p}: read-only memory of an image loaded on \
                 device {device} (a const global?)"
            )))
        } else {
            Ok(())
        }
    }

    /// A backend with `config`, reporting as plugin `name`.
    pub fn new(name: &'static str, config: HostConfig) -> Self {
        Self {
            name,
            devices: (0..config.devices).map(|_| HostDevice::default()).collect(),
            image_dir: config.image_dir,
            keep_image_files: config.keep_image_files,
            memfd_images: config.memfd_images,
        }
    }

    fn device(&self, device: DeviceId) -> &HostDevice {
        &self.devices[device.index()]
    }

    /// Bytes currently allocated on `device` through `data_alloc`.
    pub fn live_bytes(&self, device: DeviceId) -> usize {
        lock(&self.device(device).memory).live_bytes()
    }

    /// Number of images loaded on `device`.
    pub fn loaded_images(&self, device: DeviceId) -> usize {
        state_lock::read(&self.device(device).images).len()
    }

    /// Release every device; the first error is returned after all of them
    /// were released.
    pub fn release_all(&self) -> Result<()> {
        let mut result = Ok(());
        for (i, device) in self.devices.iter().enumerate() {
            if let Err(e) = device.release(self.name, i) {
                result = result.and(Err(e));
            }
        }
        result
    }
}

impl Backend for HostBackend {
    /// Nothing: every operation is done when it returns.
    type Queue = ();
    const NAME: &'static str = "x86_64";

    fn init(_cause: InitCause) -> Result<Self> {
        Ok(Self::new(Self::NAME, HostConfig::from_env(Self::NAME)))
    }

    fn deinit(self) -> Result<()> {
        self.release_all()
    }

    fn number_of_devices(&self) -> usize {
        self.devices.len()
    }

    fn is_valid_binary(&self, image: &ImageRef<'_>) -> bool {
        match elf::check_image(image.bytes) {
            Ok(()) => true,
            Err(why) => {
                diagnostics::debug(self.name, &format_args!("image rejected: {why}"));
                false
            }
        }
    }

    fn init_device(&self, _device: DeviceId) -> Result<()> {
        Ok(())
    }

    fn deinit_device(&self, device: DeviceId) -> Result<()> {
        self.device(device).release(self.name, device.index())
    }

    fn load_binary(
        &self,
        device: DeviceId,
        image: &ImageRef<'_>,
        options: LoadOptions,
    ) -> Result<NonNull<TargetTable>> {
        let storage = ImageStorage {
            memfd: self.memfd_images,
            dir: &self.image_dir,
            keep_file: self.keep_image_files,
        };
        let loaded = LoadedImage::load(image, storage, options.bind_now)?;
        let table = loaded.table();
        diagnostics::debug(
            self.name,
            &format_args!(
                "device {device}: loaded image {:p} ({} bytes, {} entries) from {}",
                image.desc,
                image.bytes.len(),
                image.entries.len(),
                image_origin(&loaded)
            ),
        );
        self.device(device).images.write().push(loaded);
        Ok(table)
    }

    fn unload_binary(&self, device: DeviceId, image: NonNull<DeviceImage>) -> Result<()> {
        let key = image.as_ptr() as usize;
        let loaded = {
            let mut images = self.device(device).images.write();
            let index = images.iter().rposition(|i| i.key() == key).ok_or_else(|| {
                PluginError::InvalidArgument(format!(
                    "image {image:p} is not loaded on device {device}"
                ))
            })?;
            images.remove(index)
        };
        loaded.unload()
    }

    fn data_alloc(
        &self,
        device: DeviceId,
        size: usize,
        _host_ptr: *mut c_void,
        _kind: AllocKind,
    ) -> Result<NonNull<c_void>> {
        lock(&self.device(device).memory).alloc(size)
    }

    fn data_delete(&self, device: DeviceId, tgt_ptr: NonNull<c_void>) -> Result<()> {
        lock(&self.device(device).memory).free(tgt_ptr)
    }

    fn data_delete_batch(&self, device: DeviceId, ptrs: &mut [*mut c_void]) -> Result<()> {
        lock(&self.device(device).memory).free_batch(ptrs)
    }

    fn create_queue(&self, _device: DeviceId) -> Result<()> {
        Ok(())
    }

    fn synchronize(&self, _device: DeviceId, _queue: ()) -> Result<()> {
        Ok(())
    }

    fn is_done(&self, _queue: &()) -> bool {
        // Every operation is done when it returns (the copies are memmoves,
        // a kernel runs on the calling thread): an `_async` entry leaves
        // the caller no queue to synchronise, as LLVM's host plugin.
        true
    }

    unsafe fn data_submit(
        &self,
        device: DeviceId,
        tgt_ptr: NonNull<c_void>,
        host_ptr: NonNull<c_void>,
        size: usize,
        _queue: &mut (),
    ) -> Result<()> {
        self.check_writable(device, tgt_ptr, size)?;
        // memmove: under unified memory the two may be the same block.
        // SAFETY: the caller guarantees `size` readable bytes at `host_ptr`
        // and `size` writable bytes at `tgt_ptr` (Backend::data_submit).
        unsafe {
            std::ptr::copy(
                host_ptr.as_ptr().cast::<u8>(),
                tgt_ptr.as_ptr().cast::<u8>(),
                size,
            )
        };
        Ok(())
    }

    unsafe fn data_retrieve(
        &self,
        _device: DeviceId,
        host_ptr: NonNull<c_void>,
        tgt_ptr: NonNull<c_void>,
        size: usize,
        _queue: &mut (),
    ) -> Result<()> {
        // SAFETY: the caller guarantees `size` readable bytes at `tgt_ptr`
        // and `size` writable bytes at `host_ptr` (Backend::data_retrieve).
        unsafe {
            std::ptr::copy(
                tgt_ptr.as_ptr().cast::<u8>(),
                host_ptr.as_ptr().cast::<u8>(),
                size,
            )
        };
        Ok(())
    }

    fn is_data_exchangable(&self, _src: DeviceId, _dst: DeviceId) -> bool {
        true
    }

    unsafe fn data_exchange(
        &self,
        _src: DeviceId,
        src_ptr: NonNull<c_void>,
        dst: DeviceId,
        dst_ptr: NonNull<c_void>,
        size: usize,
        _queue: &mut (),
    ) -> Result<()> {
        self.check_writable(dst, dst_ptr, size)?;
        // SAFETY: the caller guarantees `size` bytes at both pointers, in
        // host memory for every host device (Backend::data_exchange).
        unsafe {
            std::ptr::copy(
                src_ptr.as_ptr().cast::<u8>(),
                dst_ptr.as_ptr().cast::<u8>(),
                size,
            )
        };
        Ok(())
    }

    fn lock_for_fork(&self) -> ForkLocks<'_> {
        // Images before memory on every device, devices in order: the
        // backend never holds two of these at once otherwise.
        let mut held: ForkLocks<'_> = Vec::with_capacity(2 * self.devices.len());
        for device in self.devices.iter() {
            held.push(Box::new(device.images.write_across_fork()));
            held.push(Box::new(lock(&device.memory)));
        }
        held
    }

    unsafe fn run_region(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[omptarget_plugin_kit::abi::plugin::KernelArgType]>,
        teams: Option<TeamConfig>,
        _queue: &mut (),
    ) -> Result<()> {
        self.check_kernel(device, entry)?;
        match types {
            // LLVM's launch entries: every argument pointer-sized.
            // SAFETY: `entry` is a kernel of an image loaded on this device
            // (checked above), and the caller passes its pointer-sized
            // arguments (Backend::run_region).
            None => unsafe { launch::call_with_pointer_args(entry, args) },
            // The typed launch (the Rust API): its teams and threads are
            // run as asked or refused.
            Some(types) => {
                info::check_launch(teams)?;
                // SAFETY: `entry` is a kernel of an image loaded on this
                // device (checked above) with parameters of `types` (the
                // caller's contract).
                unsafe { launch::call_with_typed_args(entry, args, types) }
            }
        }
        .map_err(PluginError::InvalidArgument)
    }

    fn device_info(
        &self,
        _device: DeviceId,
        key: DeviceInfoKey,
    ) -> Result<Option<DeviceInfoValue>> {
        use DeviceInfoValue::{Number, Text};
        Ok(match key {
            DeviceInfoKey::Name => info::cpu_name().map(Text),
            DeviceInfoKey::Kind => Some(Number(device_kind::HOST_CPU)),
            DeviceInfoKey::TotalMemory => info::memory().0.map(Number),
            DeviceInfoKey::FreeMemory => info::memory().1.map(Number),
            DeviceInfoKey::MaxTeams | DeviceInfoKey::MaxThreads => Some(Number(1)),
            // In this process.
            DeviceInfoKey::Location => None,
        })
    }

    fn print_device_info(&self, device: DeviceId) {
        let images = self.loaded_images(device);
        let (blocks, bytes) = {
            let memory = lock(&self.device(device).memory);
            (memory.live_blocks(), memory.live_bytes())
        };
        println!(
            "    omptarget-rs {} plugin, device {device}: in-process x86_64 host device, \
             {images} image(s) loaded, {blocks} block(s) / {bytes} bytes allocated",
            self.name
        );
    }
}
