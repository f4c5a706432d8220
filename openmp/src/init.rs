//! Getting a device ready for an offload: initialise it once, load the
//! registered images on it, map their `declare target` globals and run
//! their constructors (LLVM's `device_is_ready`, `checkDeviceAndCtors`,
//! `InitLibrary`).

use super::diag::{Fatal, Loc};
use super::error::OffloadError;
use super::{DeviceCtx, Offload};
use omptarget::abi::OFFLOAD_DEVICE_DEFAULT;
use std::ffi::c_void;

impl<'a> Offload<'a> {
    /// LLVM's `device_is_ready`: the device exists and its one
    /// initialisation attempt succeeded (made now if not made yet).
    #[inline]
    pub(crate) fn ready_device(&self, device: i64) -> Option<DeviceCtx<'a>> {
        let dev = self.device(device)?;
        let ready = match dev.slot.init.get() {
            Some(&ready) => ready,
            None => self.initialise_device(&dev),
        };
        ready.then_some(dev)
    }

    /// [`Offload::ready_device`]'s one initialisation attempt (out of
    /// line: every later lookup of the device only reads its outcome).
    #[inline(never)]
    fn initialise_device(&self, dev: &DeviceCtx<'a>) -> bool {
        let requires = self.registry.requires_flags();
        *dev.slot.init.get_or_init(|| {
            let ready = dev.ops.init(requires).is_ok();
            if ready {
                self.ompt_device_initialized(dev);
            }
            ready
        })
    }

    /// The device an `omp_*` call names, as the caller's release looks it
    /// up. LLVM 22's `PluginManager::getDevice` loads the registered images
    /// still pending on the device (running their constructors) on every
    /// lookup, so any API call can be an image's first use; LLVM 14 and 19
    /// load images only for target constructs. `initialise` asks for
    /// `device_is_ready` (the calls that need a live device); without it
    /// an LLVM 14/19 lookup leaves the device as it is.
    #[inline]
    pub(crate) fn api_device(&self, device: i64, initialise: bool) -> Option<DeviceCtx<'a>> {
        let dev = if initialise {
            self.ready_device(device)?
        } else {
            self.device(device)?
        };
        // Without pending images the releases agree, and the release (a
        // stack walk) is not asked: the common case costs one atomic load.
        if !dev.slot.has_pending() {
            return Some(dev);
        }
        self.api_device_with_pending(dev, device, initialise)
    }

    /// [`Offload::api_device`] for a device with images still pending
    /// (out of line: loading them is the rare case).
    #[inline(never)]
    fn api_device_with_pending(
        &self,
        dev: DeviceCtx<'a>,
        device: i64,
        initialise: bool,
    ) -> Option<DeviceCtx<'a>> {
        if !self.host.caller_release().loads_images_on_device_lookup() {
            return Some(dev);
        }
        let dev = if initialise {
            dev
        } else {
            self.ready_device(device)?
        };
        if self.init_library(&dev).is_err() {
            self.report(OffloadError::InitGlobalsFailed { device });
            return None;
        }
        Some(dev)
    }

    /// `device_is_ready(device)`.
    pub fn device_is_ready(&self, device: i64) -> bool {
        self.ready_device(device).is_some()
    }

    /// LLVM's `checkDeviceAndCtors`: `Ok(None)` means "do not offload"
    /// (offload disabled, the host device, or a failure already reported
    /// and tolerated by the policy); `Err` is a fatal error.
    pub(crate) fn check_device_and_ctors(
        &self,
        device_id: i64,
        loc: Loc<'_>,
    ) -> Result<Option<DeviceCtx<'a>>, Fatal> {
        if self.is_offload_disabled() {
            return Ok(None);
        }
        let device_id = if device_id == OFFLOAD_DEVICE_DEFAULT {
            i64::from(self.host.default_device())
        } else {
            device_id
        };
        if self.registry.num_devices() == 0 {
            self.handle_target_outcome(false, loc)?;
            return Ok(None);
        }
        if device_id == i64::from(self.registry.initial_device()) {
            return Ok(None);
        }
        let devices = self.registry.num_devices();
        if !(0..devices as i64).contains(&device_id) {
            let release = self.host.caller_release();
            if release.invalid_device_is_fatal() {
                return Err(Fatal::device_out_of_range(
                    device_id,
                    devices as usize,
                    release,
                ));
            }
        }
        let Some(dev) = self.ready_device(device_id) else {
            self.report(OffloadError::DeviceNotReady { device: device_id });
            self.handle_target_outcome(false, loc)?;
            return Ok(None);
        };
        if dev.slot.has_pending() && self.init_library(&dev).is_err() {
            self.report(OffloadError::InitGlobalsFailed { device: device_id });
            self.handle_target_outcome(false, loc)?;
            return Ok(None);
        }
        Ok(Some(dev))
    }

    /// LLVM's `InitLibrary`: load every registered image not yet loaded on
    /// the device, map the globals of each, then run pending constructors.
    ///
    /// Unlike LLVM, no lock is held while images load ([`super::load`]):
    /// the plugin may dlopen, and a library constructor or destructor on
    /// another thread, holding the dynamic loader's lock, may be waiting
    /// for our locks. So a library can register while this thread loads;
    /// its constructors must not run before its image is loaded here, so
    /// the device's registration count is read before loading and checked
    /// again under `pending`, and the loading is redone if it moved.
    pub(crate) fn init_library(&self, dev: &DeviceCtx<'a>) -> Result<(), OffloadError> {
        loop {
            let seen = dev.slot.registrations();
            self.load_images(dev)?;
            let mut pending = dev.slot.lock_pending();
            if dev.slot.registrations() != seen {
                continue;
            }
            // Held across the constructor kernels, as LLVM does: another
            // thread's first region on this device waits for them.
            for lists in pending.libs.values_mut() {
                for &ctor in &lists.ctors {
                    // SAFETY: a ctor address is a host entry of a registered
                    // binary; a kernel without arguments.
                    let ran = {
                        let launch = super::region::KernelLaunch::legacy(1, 1, true);
                        let no_args = super::MapArgs::empty();
                        // SAFETY: see above: a kernel without arguments.
                        let region = unsafe {
                            super::region::TargetRegion::new(ctor as *mut c_void, &no_args, &launch)
                        };
                        self.run_target(dev, region)
                    };
                    if ran.is_err() {
                        return Err(self.report(OffloadError::CtorFailed { ctor }));
                    }
                }
                lists.ctors.clear();
            }
            // Registrations set it again holding `pending`, after this.
            dev.slot
                .has_pending
                .store(false, std::sync::atomic::Ordering::Release);
            drop(pending);
            return Ok(());
        }
    }

    /// Is the host entry `host_ptr` loaded on `dev` (a target table exists
    /// for its binary)?
    pub(crate) fn entry_loaded(&self, dev: &DeviceCtx<'_>, host_ptr: usize) -> bool {
        // Only reads (the host-entry memo aside): no new tables generation,
        // so no thread's cached launch entry is dropped.
        let mut tables = self.registry.read_tables();
        let Some((entries_begin, _)) = tables.resolve_host_ptr(host_ptr) else {
            return false;
        };
        tables
            .by_entries_begin
            .get(&entries_begin)
            .is_some_and(|t| t.target(dev.id as usize).is_some())
    }
}
