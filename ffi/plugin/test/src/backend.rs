//! [`TestBackend`]: the host backend with recording and fault injection.

use crate::conf::Conf;
use crate::recorder::{self, NAME};
use omptarget_plugin_host::config::HostConfig;
use omptarget_plugin_host::HostBackend;
use omptarget_plugin_kit::abi::plugin::KernelArgType;
use omptarget_plugin_kit::abi::{AllocKind, DeviceImage, TargetTable};
use omptarget_plugin_kit::{
    pointer_args_only, Backend, DeviceId, EntryCall, ImageRef, InitCause, LoadOptions, PluginError,
    TeamConfig,
};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

type Result<T> = std::result::Result<T, PluginError>;

/// See the crate docs.
pub struct TestBackend {
    host: HostBackend,
    conf: Conf,
    /// Makes "live bytes + size <= limit" and the allocation one step.
    alloc_gate: Mutex<()>,
    /// Questions for the location failed so far (`fail_location`).
    location_failures: std::sync::atomic::AtomicUsize,
}

impl TestBackend {
    fn maybe_panic(&self, entry: &str) {
        if self.conf.panics_in(entry) {
            panic!("fault injected: panic_in={entry}");
        }
    }
}

fn injected(what: String) -> PluginError {
    PluginError::backend(format!("fault injected: {what}"))
}

impl Backend for TestBackend {
    const NAME: &'static str = NAME;
    type Queue = ();

    fn init(_cause: InitCause) -> Result<Self> {
        let library = recorder::library_path()
            .ok_or_else(|| PluginError::backend("dladdr cannot find this library's path"))?;
        let conf = Conf::load(&library).map_err(PluginError::Backend)?;
        recorder::set_log_path(conf.log.clone());
        if conf.fail_init_plugin {
            return Err(injected("fail_init_plugin=1".into()));
        }
        if conf.panics_in("init_plugin") {
            panic!("fault injected: panic_in=init_plugin");
        }
        let host = HostBackend::new(
            NAME,
            HostConfig {
                devices: conf.devices,
                ..HostConfig::default()
            },
        );
        Ok(Self {
            host,
            conf,
            alloc_gate: Mutex::new(()),
            location_failures: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn deinit(self) -> Result<()> {
        self.maybe_panic("deinit_plugin");
        let in_use = self.conf.deinit_in_use;
        self.host.deinit()?;
        if in_use {
            // As the kit answers after its wait; the state is gone here
            // (the kit dropped it), which a runtime cannot tell.
            return Err(PluginError::InUse {
                readers: 1,
                waited_ms: 0,
            });
        }
        Ok(())
    }

    fn number_of_devices(&self) -> usize {
        self.host.number_of_devices()
    }

    fn reported_device_count(&self) -> usize {
        self.conf
            .claimed_devices
            .unwrap_or_else(|| self.host.number_of_devices())
    }

    fn is_valid_binary(&self, image: &ImageRef<'_>) -> bool {
        self.host.is_valid_binary(image)
    }

    fn is_device_compatible(&self, device: DeviceId, image: &ImageRef<'_>) -> Result<bool> {
        self.maybe_panic("is_device_compatible");
        if self.conf.incompatible_device.contains(&device.index()) {
            return Ok(false);
        }
        self.host.is_device_compatible(device, image)
    }

    fn init_device(&self, device: DeviceId) -> Result<()> {
        self.maybe_panic("init_device");
        if self.conf.fail_init_device.contains(&device.index()) {
            return Err(injected(format!("fail_init_device={device}")));
        }
        self.host.init_device(device)
    }

    fn deinit_device(&self, device: DeviceId) -> Result<()> {
        self.maybe_panic("deinit_device");
        self.host.deinit_device(device)
    }

    fn load_binary(
        &self,
        device: DeviceId,
        image: &ImageRef<'_>,
        options: LoadOptions,
    ) -> Result<NonNull<TargetTable>> {
        self.maybe_panic("load_binary");
        self.host.load_binary(device, image, options)
    }

    fn unload_binary(&self, device: DeviceId, image: NonNull<DeviceImage>) -> Result<()> {
        self.maybe_panic("unload_binary");
        self.host.unload_binary(device, image)
    }

    fn data_alloc(
        &self,
        device: DeviceId,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<NonNull<c_void>> {
        self.maybe_panic("data_alloc");
        let _gate = self
            .alloc_gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(limit) = self.conf.alloc_limit_bytes {
            let live = self.host.live_bytes(device);
            if live.saturating_add(size) > limit {
                return Err(injected(format!(
                    "alloc_limit_bytes={limit}: device {device} has {live} bytes live, {size} more asked"
                )));
            }
        }
        self.host.data_alloc(device, size, host_ptr, kind)
    }

    fn data_delete(&self, device: DeviceId, tgt_ptr: NonNull<c_void>) -> Result<()> {
        self.maybe_panic("data_delete");
        self.host.data_delete(device, tgt_ptr)
    }

    fn create_queue(&self, device: DeviceId) -> Result<()> {
        self.host.create_queue(device)
    }

    fn synchronize(&self, device: DeviceId, queue: ()) -> Result<()> {
        self.host.synchronize(device, queue)
    }

    fn is_done(&self, queue: &()) -> bool {
        self.host.is_done(queue)
    }

    unsafe fn data_submit(
        &self,
        device: DeviceId,
        tgt_ptr: NonNull<c_void>,
        host_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut (),
    ) -> Result<()> {
        self.maybe_panic("data_submit");
        // SAFETY: our caller's contract (`Backend::data_submit`, # Safety):
        // `host_ptr` readable and `tgt_ptr` writable for `size` bytes; the
        // pointers are passed to the host backend unchanged.
        unsafe {
            self.host
                .data_submit(device, tgt_ptr, host_ptr, size, queue)
        }
    }

    unsafe fn data_retrieve(
        &self,
        device: DeviceId,
        host_ptr: NonNull<c_void>,
        tgt_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut (),
    ) -> Result<()> {
        self.maybe_panic("data_retrieve");
        // SAFETY: our caller's contract (`Backend::data_retrieve`,
        // # Safety): `tgt_ptr` readable and `host_ptr` writable for `size`
        // bytes; the pointers are passed to the host backend unchanged.
        unsafe {
            self.host
                .data_retrieve(device, host_ptr, tgt_ptr, size, queue)
        }
    }

    fn is_data_exchangable(&self, src: DeviceId, dst: DeviceId) -> bool {
        self.host.is_data_exchangable(src, dst)
    }

    unsafe fn data_exchange(
        &self,
        src: DeviceId,
        src_ptr: NonNull<c_void>,
        dst: DeviceId,
        dst_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut (),
    ) -> Result<()> {
        // SAFETY: our caller's contract (`Backend::data_exchange`,
        // # Safety): `src_ptr` readable on `src` and `dst_ptr` writable on
        // `dst` for `size` bytes; the devices are the host backend's own.
        unsafe {
            self.host
                .data_exchange(src, src_ptr, dst, dst_ptr, size, queue)
        }
    }

    unsafe fn run_region(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[KernelArgType]>,
        teams: Option<TeamConfig>,
        queue: &mut (),
    ) -> Result<()> {
        // This plugin runs every launch as LLVM's entries do (the host
        // backend without `types`: pointer-sized slots), so a typed launch
        // with other types is refused rather than passed wrong.
        pointer_args_only(types)?;
        self.maybe_panic("run_target_region");
        // SAFETY: our caller's contract (`Backend::run_region`, # Safety):
        // `entry` comes from a target table we returned for `device`, and
        // `load_binary` returns the host backend's own tables unchanged, so
        // `entry` comes from a host table for `device`; `args` are what the
        // kernel expects (all pointer-sized, checked above).
        unsafe {
            self.host
                .run_region(device, entry, args, None, teams, queue)
        }
    }

    fn print_device_info(&self, device: DeviceId) {
        self.host.print_device_info(device)
    }

    fn device_info(
        &self,
        device: DeviceId,
        key: omptarget_plugin_kit::abi::plugin::DeviceInfoKey,
    ) -> Result<Option<omptarget_plugin_kit::DeviceInfoValue>> {
        use omptarget_plugin_kit::abi::plugin::DeviceInfoKey;
        use std::sync::atomic::Ordering::Relaxed;
        if key != DeviceInfoKey::Location {
            return self.host.device_info(device, key);
        }
        if self.location_failures.fetch_add(1, Relaxed) < self.conf.fail_location {
            return Err(injected("fail_location".into()));
        }
        Ok(self
            .conf
            .location
            .clone()
            .map(omptarget_plugin_kit::DeviceInfoValue::Text))
    }

    fn on_entry(call: &EntryCall) {
        recorder::record(call);
        if *call == EntryCall::DeinitPlugin {
            // Re-read the conf's log path at the next initialisation.
            recorder::forget_log_path();
        }
    }

    fn on_unload() {
        recorder::record_at_unload(&"fini");
    }

    fn lock_for_fork(&self) -> omptarget_plugin_kit::fork::ForkLocks<'_> {
        // The log's lock (every entry), then the allocation gate, then the
        // host backend's: the order the entries take them in.
        let mut held = recorder::lock_for_fork();
        held.push(Box::new(
            self.alloc_gate
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ));
        held.extend(self.host.lock_for_fork());
        held
    }
}
