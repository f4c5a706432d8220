//! Images on a device: validity check, load, unload, and the records the
//! teardown unloads.
//!
//! No lock is held across `load_binary`/`unload_binary`: the host plugin
//! dlopens and dlcloses images, so they may wait for the dynamic loader's
//! lock, which a thread in a library constructor or destructor holds while
//! it takes our locks (`__tgt_register_lib`, `__tgt_unregister_lib`). The
//! image list's lock only guards the list. Our plugins are called
//! concurrently for images, as for everything else; only a plugin written
//! for LLVM 14's runtime is serialised ([`crate::plugin::Plugin`]'s
//! `legacy_image_guard`; `docs/plugins.md`, "The runtime side of the contract").
use super::Device;
use crate::sync::lock;
use crate::{abi, Error, Result};
use std::any::Any;
use std::sync::Arc;

/// The entries of an image as loaded on a device (its target table).
#[derive(Debug)]
pub struct LoadedImage {
    /// Copied from the plugin's `__tgt_target_table`, in image order.
    pub entries: Vec<abi::OffloadEntry>,
}

/// Something that must stay alive while an image is loaded (the image bytes
/// and entry table when the runtime built them).
pub(crate) type KeepAlive = Arc<dyn Any + Send + Sync>;

/// One image loaded on a device.
pub(crate) struct ImageRecord {
    pub image: ImagePtr,
    /// Released only after the plugin is closed, or once unloaded.
    pub _keepalive: Option<KeepAlive>,
    /// Its destructor kernels, as the OpenMP layer ran them at
    /// unregistration ([`Device::note_dtor_kernels`]).
    pub dtor_kernels: Option<crate::shutdown_report::DtorKernels>,
    /// While a typed [`crate::Image`] handle owns the image: the entries it
    /// was loaded for. Still set at shutdown: the handle was never dropped.
    pub handle: Option<Vec<String>>,
}

/// A `__tgt_device_image` address the device keeps for `unload_binary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ImagePtr(pub *mut abi::DeviceImage);
// SAFETY: the address is only handed back to the plugin that loaded it; the
// loader of the image guarantees it stays valid while loaded.
unsafe impl Send for ImagePtr {}

impl Device {
    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Ask the plugin whether it can run `image` (`is_valid_binary`). Does
    /// not initialise the device.
    ///
    /// # Safety
    /// `image` points to a valid `__tgt_device_image`.
    pub unsafe fn is_valid_image(&self, image: *mut abi::DeviceImage) -> Result<bool> {
        // SAFETY: per this function's contract.
        let valid = self.plugin.call(|e| unsafe { e.is_valid_binary(image) })?;
        Ok(valid != 0)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Whether this device can run `image`, which its plugin accepted
    /// ([`Device::is_valid_image`]): the plugin's
    /// `__tgt_rtl_is_device_compatible`, true for a plugin without it
    /// (every device of a plugin runs what the plugin accepts, LLVM 14's
    /// and 19's rule). A question that fails (the plugin says why, or is
    /// dead) is answered as without the entry, yes, and logged: the load
    /// then says what is wrong. Does not initialise the device.
    ///
    /// # Safety
    /// `image` points to a valid `__tgt_device_image`.
    pub unsafe fn can_run_image(&self, image: *mut abi::DeviceImage) -> bool {
        let local = self.local_id;
        // SAFETY: per this function's contract.
        let answer = self
            .plugin
            .call(|e| unsafe { e.is_device_compatible(local, image) });
        match answer {
            Ok(None) => true,
            Ok(Some(yes)) if yes != 0 => true,
            // The entry clears the last error first: one now says the
            // question failed, and no message means a plain no.
            Ok(Some(_)) => match self.plugin.take_last_error() {
                None => false,
                Some(why) => {
                    tracing::warn!(plugin = %self.plugin.name(), device = self.id, %why, "cannot tell whether the device runs an image; offering it");
                    true
                }
            },
            Err(e) => {
                tracing::warn!(plugin = %self.plugin.name(), device = self.id, error = %e, "cannot tell whether the device runs an image; offering it");
                true
            }
        }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Load an image; the device keeps it until shutdown (or unload).
    ///
    /// # Safety
    /// `image` points to a valid device image that outlives the load.
    pub unsafe fn load_image(&self, image: *mut abi::DeviceImage) -> Result<LoadedImage> {
        // SAFETY: per this function's contract.
        unsafe { self.load_image_kept(image, None) }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// [`Device::load_image`], keeping `keepalive` (the storage `image`
    /// points into) alive for as long as the plugin may use the image.
    ///
    /// The image is loaded as LLVM's runtime loads it (`load_binary`): a
    /// host plugin binds the functions it references at their first call,
    /// so an image referencing a function that exists nowhere loads. The
    /// OpenMP layer loads clang's images this way, as LLVM does;
    /// [`Device::load_image_bind_now`] refuses such an image instead.
    ///
    /// # Safety
    /// `image` points to a valid device image that lives at least as long as
    /// `keepalive` (or the load, if `None`).
    pub unsafe fn load_image_kept(
        &self,
        image: *mut abi::DeviceImage,
        keepalive: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Result<LoadedImage> {
        // SAFETY: per this function's contract.
        unsafe { self.load_image_with(image, keepalive, 0) }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// [`Device::load_image_kept`], binding every symbol the image
    /// references now (`__tgt_rtl_load_binary_flags` with
    /// [`abi::plugin::load_flags::BIND_NOW`]): an image referencing a
    /// symbol the loader cannot find is refused with
    /// [`Error::ImageLoadFailed`] naming it (`undefined symbol: NAME`),
    /// before any of its code (constructors included) runs, and nothing
    /// stays loaded. [`crate::Image::load`] loads this way.
    ///
    /// A plugin without that entry (LLVM's) gets `load_binary`: the image
    /// is loaded as that plugin loads every image (LLVM's host plugins bind
    /// functions at their first call).
    ///
    /// # Safety
    /// As for [`Device::load_image_kept`].
    pub unsafe fn load_image_bind_now(
        &self,
        image: *mut abi::DeviceImage,
        keepalive: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Result<LoadedImage> {
        // SAFETY: per this function's contract.
        unsafe { self.load_image_with(image, keepalive, abi::plugin::load_flags::BIND_NOW) }
    }

    /// Load `image` with the plugin's `load_flags` `flags`: through
    /// `load_binary_flags` when `flags` is not 0 and the plugin exports it,
    /// else through `load_binary`.
    ///
    /// # Safety
    /// As for [`Device::load_image_kept`].
    unsafe fn load_image_with(
        &self,
        image: *mut abi::DeviceImage,
        keepalive: Option<Arc<dyn Any + Send + Sync>>,
        flags: u32,
    ) -> Result<LoadedImage> {
        let _span = crate::profile::span(crate::profile::Kind::Registration, "load image")
            .map(|s| s.device(self.id));
        self.ensure_initialized()?;
        let local = self.local_id;
        let table = {
            let _legacy = self.plugin.legacy_image_guard();
            let _call = crate::profile::span(crate::profile::Kind::Plugin, "load_binary");
            self.plugin.call(|e| {
                // SAFETY: per this function's contract `image` is a valid
                // descriptor; the device is initialised.
                let flagged = (flags != 0)
                    .then(|| unsafe { e.load_binary_flags(local, image, flags) })
                    .flatten();
                // SAFETY: as above.
                flagged.unwrap_or_else(|| unsafe { e.load_binary(local, image) })
            })?
        };
        if table.is_null() {
            return Err(Error::ImageLoadFailed {
                device: self.id,
                plugin: self.plugin.name().to_owned(),
                reason: self.plugin.take_last_error(),
            });
        }
        // The image is loaded from here on: record it before anything can
        // fail, so that the teardown unloads it.
        lock(&self.images).push(ImageRecord {
            image: ImagePtr(image),
            _keepalive: keepalive,
            dtor_kernels: None,
            handle: None,
        });
        // SAFETY: a non-null table from load_binary is valid until unload.
        let entries =
            unsafe { copy_target_table(&*table) }.ok_or_else(|| Error::ImageLoadFailed {
                device: self.id,
                plugin: self.plugin.name().to_owned(),
                reason: Some("the plugin's target table is malformed".into()),
            })?;
        tracing::debug!(plugin = %self.plugin.name(), device = self.id, entries = entries.len(), "image loaded");
        Ok(LoadedImage { entries })
    }

    /// Say that a typed [`crate::Image`] handle owns the latest load of
    /// `image` (`Some`: the entries it was loaded for) or no longer does.
    pub(crate) fn set_image_handle(
        &self,
        image: *mut abi::DeviceImage,
        handle: Option<Vec<String>>,
    ) {
        if let Some(record) = lock(&self.images)
            .iter_mut()
            .rev()
            .find(|r| r.image.0 == image)
        {
            record.handle = handle;
        }
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Unload `image` (`unload_binary`). `Ok(true)`: unloaded. `Ok(false)`:
    /// the plugin cannot unload images, so it stays loaded (and its storage
    /// alive) until shutdown. Unknown images are an error.
    ///
    /// # Safety
    /// `image` was loaded on this device with [`Device::load_image`].
    pub unsafe fn unload_image(&self, image: *mut abi::DeviceImage) -> Result<bool> {
        // Taken out of the list for the call (no lock across it), and put
        // back if the plugin keeps the image. The same image may be loaded
        // twice; the plugin unloads its latest copy, so take the last record.
        let record = {
            let mut images = lock(&self.images);
            let Some(index) = images.iter().rposition(|r| r.image.0 == image) else {
                return Err(Error::InvalidArgument(format!(
                    "image {image:p} is not loaded on device {}",
                    self.id
                )));
            };
            if !self
                .plugin
                .exports(crate::abi::plugin::OptionalEntry::UnloadBinary)
            {
                return Ok(false);
            }
            images.remove(index)
        };
        let local = self.local_id;
        let legacy = self.plugin.legacy_image_guard();
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "unload_binary")
            .map(|s| s.device(self.id));
        let unloaded = self
            .plugin
            // SAFETY: `image` is loaded on this device.
            .call(|e| unsafe { e.unload_binary(local, image) }.unwrap_or(abi::OFFLOAD_FAIL))
            .and_then(|code| self.check("unload_binary", code));
        drop(legacy);
        if let Err(err) = unloaded {
            // Still loaded as far as anyone knows: the teardown retries it.
            lock(&self.images).push(record);
            return Err(err);
        }
        Ok(true)
    }

    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Record that the OpenMP layer ran `image`'s destructor kernels
    /// (clang 14's `DTOR` entries) at its unregistration: `ran` succeeded,
    /// `failed` failed. The shutdown report lists them with the image
    /// ([`crate::ImageDtors`]). An image not loaded here is ignored.
    pub fn note_dtor_kernels(&self, image: *mut abi::DeviceImage, ran: usize, failed: usize) {
        let mut images = lock(&self.images);
        if let Some(record) = images.iter_mut().rev().find(|r| r.image.0 == image) {
            record.dtor_kernels = Some(crate::shutdown_report::DtorKernels { ran, failed });
        }
    }

    /// How many images are loaded on this device.
    pub fn loaded_image_count(&self) -> usize {
        lock(&self.images).len()
    }
}

/// Copy the entries of a target table.
///
/// # Safety
/// `table` is a target table returned by `load_binary` and not yet unloaded.
unsafe fn copy_target_table(table: &abi::TargetTable) -> Option<Vec<abi::OffloadEntry>> {
    if table.entries_begin.is_null() {
        return table.entries_end.is_null().then(Vec::new);
    }
    // SAFETY: both bounds point into the same table (per the contract).
    let len = unsafe { table.entries_end.offset_from(table.entries_begin) };
    let len = usize::try_from(len).ok()?;
    // SAFETY: `len` entries from `entries_begin` are the table.
    Some(unsafe { std::slice::from_raw_parts(table.entries_begin, len) }.to_vec())
}
