//! The OpenMP layer: LLVM libomptarget's semantics over a runtime
//! (LLVM's `offload/src/OpenMP`, beside its plugin manager, which is the
//! `omptarget` crate): registration of host binaries, data mapping
//! (`target data`, `enter/exit data`, `update`), target regions, and the
//! `omp_target_*` calls. The C shim is a thin layer over this crate: each
//! `__tgt_*` / `omp_target_*` export builds an [`Offload`] (three
//! references) and calls the method of the same name.
//!
//! The layer runs over [`Platform`] / [`DeviceOps`] (traits), implemented
//! here for `omptarget::Runtime` / `omptarget::Device` through the core's
//! interface for this layer (see the `omptarget` crate docs) and, in the
//! tests, for host-memory test devices. Device mapping tables
//! (`omptarget::mapping::MappingTable`) belong to the core's devices; this
//! layer decides what to map.
//!
//! Behaviour, return values and stderr text follow LLVM 14's release build
//! (`REPORT` prints `Libomptarget error: ...`, debug prints are off).
//! Printing goes through [`HostEnv::emit`]; fatal errors come back as
//! [`Fatal`] for the shim to print and abort with.
//!
//! Deliberate differences: where LLVM 14 goes on with bad input and
//! crashes or corrupts memory (wrapping `omp_target_memcpy` offsets,
//! `omp_target_memcpy_rect` blocks larger than their arrays, frees of
//! foreign pointers, null argument arrays), we refuse it with an error and
//! copy nothing; each is listed where it is handled (`api`'s module docs
//! for the `omp_target_*` calls) and in `tests/c/README.md`. A copy into a
//! `const` declare-target global (`target update to`) faults in LLVM's
//! host plugin; ours refuses it (read-only memory of the image), so the
//! update fails as any failed copy does (`ffi/program/shim/tests/bad_input.rs`,
//! docs/rust-api.md "Read-only globals").
//!
//! # For the shim
//!
//! Keep one [`Registry`] next to the `Runtime` (not inside it: the registry
//! exists before the runtime is built, at the first `__tgt_register_lib`,
//! and outlives nothing but its registrations). Per call build
//! `Offload::new(&registry, &runtime, &host_env)` (or with
//! [`EmptyPlatform`] while no runtime exists) and call:
//!
//! | export | method |
//! |---|---|
//! | `__tgt_register_requires` | [`Offload::register_requires`] |
//! | `__tgt_register_lib` / `__tgt_unregister_lib` | [`Offload::register_lib`] / [`Offload::unregister_lib`]; shut down when [`Registry::registered_libs`] is 0, after [`Offload::dump_mappings_at_exit`] |
//! | `__tgt_init_all_rtls` | [`Offload::init_all_plugins`] |
//! | `__tgt_target_data_{begin,end,update}[_nowait][_mapper]` | [`Offload::target_data_begin`], [`Offload::target_data_end`], [`Offload::target_data_update`] with [`MapArgs::from_raw`] |
//! | `__tgt_target[_nowait][_mapper]` | [`Offload::target`] (`teams = false`) |
//! | `__tgt_target_teams[_nowait][_mapper]` | [`Offload::target`] (`teams = true`) |
//! | `__tgt_mapper_num_components` / `__tgt_push_mapper_component` | [`mapper_num_components`] / [`push_mapper_component`] |
//! | `__kmpc_push_target_tripcount[_mapper]` | [`Offload::push_target_tripcount`] |
//! | `__tgt_set_info_flag` | [`Registry::set_info_level`] (and the plugins') |
//! | `omp_get_num_devices` / `omp_get_initial_device` | [`Offload::num_devices`] / [`Offload::initial_device`] |
//! | `omp_target_alloc`, `llvm_omp_target_alloc_{device,host,shared}` | [`Offload::target_alloc`] |
//! | `omp_target_free` / `omp_target_is_present` | [`Offload::target_free`] / [`Offload::target_is_present`] |
//! | `omp_target_memcpy` / `omp_target_memcpy_rect` | [`Offload::target_memcpy`] / [`Offload::target_memcpy_rect`] |
//! | `omp_target_{associate,disassociate}_ptr` | [`Offload::target_associate_ptr`] / [`Offload::target_disassociate_ptr`] |
//!
//! A `Result<_, Fatal>` that is `Err` must be ended with [`Fatal::abort`].
//! `LIBOMPTARGET_INFO`: [`info::info_level_from_env`]; `OMP_TARGET_OFFLOAD`:
//! libomp's `__kmpc_get_target_offload` via [`TargetOffloadPolicy::from_kmp`].
//!
//! # Module map
//!
//! * State: [`registry`] (registered binaries, device slots, the offload
//!   policy and requires flags), `device_table` (the lock-free snapshot of
//!   device slots the read side uses), `ptr_hash` (a cheap hasher for
//!   the registry's maps keyed by addresses and thread numbers), `lock`
//!   (the crate's one way to take a mutex, poisoned or not).
//! * Registration: [`registration`] (register/unregister libraries,
//!   requires), [`entry_layout`] (a library's offload entries read in the
//!   32- or 56-byte layout its compiler wrote), [`offload_binary`]
//!   (OffloadBinary-wrapped images, unwrapped), `image_copy` (the
//!   runtime's copy of each registered image).
//! * Devices: [`device_ops`] ([`DeviceOps`] / [`Platform`], and their
//!   implementations over the core), [`init`] (device readiness, ctors),
//!   `load` (image loading, holding no lock across the plugin), `in_flight`
//!   (loads in flight that other threads wait for).
//! * Mapping and regions: [`data`] (begin/end), [`update`], [`region`]
//!   (target regions), [`mapper`] (user-defined mappers), `cxx_vector`
//!   (the mapper handle: a libstdc++ `std::vector`), [`args`] (the raw
//!   argument arrays, checked).
//! * `omp_target_*`: [`api`], `api_since_llvm19` (the calls LLVM 19 and 22
//!   added: `omp_get_mapped_ptr`, `omp_target_memset`), [`api_since_llvm22`]
//!   (LLVM 22's device UIDs and `omp_target_is_accessible`), `host_blocks`
//!   (blocks `omp_target_alloc` took with `malloc` for the host while no
//!   device existed).
//! * Tools: [`ompt`] (OMPT device tracing: the tool's callbacks, and
//!   where LLVM 19 and 22 emit them).
//! * Releases: [`release`] (the LLVM release whose behaviour a call
//!   follows; `docs/releases.md` in the repository says where they differ).
//! * Output and errors: [`diag`] (diagnostics and fatal errors), [`error`],
//!   [`info`] (`LIBOMPTARGET_INFO` output), [`policy`]
//!   (`OMP_TARGET_OFFLOAD`).
//! * Tests only: `testkit` (host-memory test devices and platforms, a
//!   recording host environment, binary descriptor builders) and `tests`
//!   (one module per topic; golden outputs in `tests/fixtures`).

#![deny(missing_docs)]
pub mod api;
mod api_since_llvm19;
pub mod api_since_llvm22;
pub mod args;
mod cxx_vector;
pub mod data;
pub mod device_ops;
mod device_table;
pub mod diag;
pub mod entry_layout;
pub mod error;
mod host_blocks;
mod image_copy;
mod in_flight;
pub mod info;
mod info_dump;
pub mod init;
mod load;
mod lock;
pub mod mapper;
pub mod offload_binary;
pub mod ompt;
pub mod policy;
mod ptr_hash;
pub mod region;
pub mod registration;
pub mod registry;
pub mod release;
pub mod update;

#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

pub use args::{MapArgs, MapperFn, OwnedMapArgs};
pub use cxx_vector::MapComponent;
pub use device_ops::{DeviceOps, EmptyPlatform, OpFailed, Platform};
pub use diag::{Diagnostic, Fatal, Ident, Loc, SourceInfo};
pub use error::OffloadError;
pub use mapper::{mapper_num_components, push_mapper_component, MapperComponents};
pub use policy::TargetOffloadPolicy;
pub use region::{KernelLaunch, TargetRegion};
pub use registry::Registry;
pub use release::{LinkedName, Release};

use omptarget::device::DevicePtr;
use omptarget::mapping::{DeviceMemory, MapEvent};
use registry::DeviceSlot;
use std::ffi::c_void;

/// What the offload layer needs from the host OpenMP runtime (libomp) and
/// the process.
pub trait HostEnv: Sync {
    /// `omp_get_default_device()`.
    fn default_device(&self) -> i32;
    /// `__kmpc_global_thread_num(NULL)`.
    fn global_thread_num(&self) -> i32;
    /// `__kmpc_get_target_offload()` (read once, at the first registration).
    fn target_offload_policy(&self) -> TargetOffloadPolicy;
    /// Print one diagnostic on stderr ([`Diagnostic::write_to_stderr`]).
    fn emit(&self, diagnostic: &Diagnostic);
    /// The LLVM release that built the binary making the current call,
    /// whose runtime's behaviour the call follows ([`Release`]); LLVM 14
    /// when it cannot be told.
    fn caller_release(&self) -> Release {
        Release::Llvm14
    }
    /// Run a kernel (the plugin's `run_target*` call). The offload layer
    /// holds no lock of its own while `kernel` runs, so the host may let a
    /// `fork()` proceed meanwhile (the shim's fork gate).
    fn kernel_section(&self, kernel: &mut dyn FnMut()) {
        kernel()
    }
    /// The current C call's return address and its binary's release
    /// (asked once per call, and only while an OMPT tool listens).
    fn call_site(&self) -> ompt::CallSite {
        ompt::CallSite {
            return_address: 0,
            release: self.caller_release(),
        }
    }
}

/// The offload layer for one call: the registry, the plugins and devices,
/// and the host environment. Cheap to build per call.
#[derive(Clone, Copy)]
pub struct Offload<'a> {
    /// Registered binaries, device slots and settings (the process's one
    /// [`Registry`]).
    pub registry: &'a Registry,
    /// The plugins and their devices ([`EmptyPlatform`] while no runtime
    /// exists).
    pub platform: &'a dyn Platform,
    /// The host OpenMP runtime and process: default device, offload
    /// policy, output.
    pub host: &'a dyn HostEnv,
}

/// A device resolved from an OpenMP device number.
pub(crate) struct DeviceCtx<'a> {
    pub id: i32,
    pub slot: &'a DeviceSlot,
    pub ops: &'a dyn DeviceOps,
}

impl<'a> Offload<'a> {
    /// Pair a registry with a platform and a host environment.
    pub fn new(registry: &'a Registry, platform: &'a dyn Platform, host: &'a dyn HostEnv) -> Self {
        Offload {
            registry,
            platform,
            host,
        }
    }

    /// The calling binary's release, asked of the host when first needed
    /// (once per C call: keep the value for the call's whole work).
    pub(crate) fn caller(&self) -> release::CallerRelease<'a> {
        release::CallerRelease::new(self.host)
    }

    pub(crate) fn emit(&self, diagnostic: Diagnostic) {
        self.host.emit(&diagnostic);
    }

    /// Print `error` as LLVM prints it (if it does) and hand it back.
    pub(crate) fn report(&self, error: OffloadError) -> OffloadError {
        if let Some(diagnostic) = error.diagnostic() {
            self.host.emit(&diagnostic);
        }
        error
    }

    /// The device with OpenMP number `device`, if it exists (initialised or
    /// not).
    #[inline]
    pub(crate) fn device(&self, device: i64) -> Option<DeviceCtx<'a>> {
        let slot = self.registry.slot(device)?;
        let ops = self.platform.device(slot.plugin, slot.local)?;
        Some(DeviceCtx {
            id: slot.id,
            slot,
            ops,
        })
    }

    /// `omp_get_num_devices()`.
    pub fn num_devices(&self) -> i32 {
        self.registry.num_devices()
    }

    /// `omp_get_initial_device()`.
    pub fn initial_device(&self) -> i32 {
        self.registry.initial_device()
    }

    /// Copy host -> device, with LLVM's DATA_TRANSFER info line.
    ///
    /// # Safety
    /// `host..host+size` is readable; `target` is device memory of `dev`.
    pub(crate) unsafe fn submit(
        &self,
        dev: &DeviceCtx<'_>,
        target: usize,
        host: usize,
        size: i64,
    ) -> Result<(), OpFailed> {
        let name = self.transfer_name(dev, host, size);
        self.info_transfer(dev, true, host, target, size, name);
        self.traced_submit(dev, target, host, size as usize, || {
            // SAFETY: our `# Safety`: `host..host+size` is readable and
            // `target` is device memory of `dev`, which is what
            // `DeviceOps::submit` asks.
            unsafe {
                dev.ops.submit(
                    DevicePtr::from_raw(target as *mut c_void),
                    host as *const c_void,
                    size as usize,
                )
            }
        })
    }

    /// Copy device -> host, with LLVM's DATA_TRANSFER info line.
    ///
    /// # Safety
    /// `host..host+size` is writable; `target` is device memory of `dev`.
    pub(crate) unsafe fn retrieve(
        &self,
        dev: &DeviceCtx<'_>,
        host: usize,
        target: usize,
        size: i64,
    ) -> Result<(), OpFailed> {
        self.traced_retrieve_by(dev, host, target, size, |dst, src, n| {
            // SAFETY: our `# Safety`: `host..host+size` is writable and
            // `target` is device memory of `dev`, which is what
            // `DeviceOps::retrieve` asks.
            unsafe { dev.ops.retrieve(dst, src, n) }
        })
    }

    /// [`Offload::retrieve`] on `queue`: complete once the queue is
    /// synchronised (`dev.ops.synchronize_queue`).
    ///
    /// # Safety
    /// `host..host+size` is writable and unread by the host until then;
    /// `target` is device memory of `dev`.
    pub(crate) unsafe fn retrieve_queued(
        &self,
        dev: &DeviceCtx<'_>,
        queue: &mut omptarget::abi::AsyncInfo,
        host: usize,
        target: usize,
        size: i64,
    ) -> Result<(), OpFailed> {
        self.traced_retrieve_by(dev, host, target, size, |dst, src, n| {
            // SAFETY: our `# Safety`, which is what
            // `DeviceOps::retrieve_queued` asks.
            unsafe { dev.ops.retrieve_queued(queue, dst, src, n) }
        })
    }

    /// A copy back by `copy`, with LLVM's DATA_TRANSFER info line and its
    /// OMPT/profile tracing.
    fn traced_retrieve_by(
        &self,
        dev: &DeviceCtx<'_>,
        host: usize,
        target: usize,
        size: i64,
        copy: impl FnOnce(*mut c_void, DevicePtr, usize) -> Result<(), OpFailed>,
    ) -> Result<(), OpFailed> {
        let name = self.transfer_name(dev, host, size);
        self.info_transfer(dev, false, host, target, size, name);
        self.traced_retrieve(dev, host, target, size as usize, || {
            copy(
                host as *mut c_void,
                DevicePtr::from_raw(target as *mut c_void),
                size as usize,
            )
        })
    }

    /// The device memory of `dev` as the mapping table sees it.
    pub(crate) fn memory<'b>(&'b self, dev: &'b DeviceCtx<'a>) -> MappingMemory<'a, 'b> {
        MappingMemory { offload: self, dev }
    }
}

/// [`DeviceMemory`] over a device, printing INFO lines as LLVM does.
pub(crate) struct MappingMemory<'a, 'b> {
    offload: &'b Offload<'a>,
    dev: &'b DeviceCtx<'a>,
}

impl DeviceMemory for MappingMemory<'_, '_> {
    fn alloc(&self, size: usize, host_ptr: usize) -> Option<usize> {
        // SAFETY: `host_ptr` is the host address of the mapping being
        // created: the program's mapped variable.
        unsafe {
            self.offload.dev_alloc(
                self.dev,
                size,
                host_ptr as *mut c_void,
                omptarget::abi::AllocKind::Default,
            )
        }
        .ok()
        .map(|p| p.addr())
    }
    fn free(&self, device_ptr: usize) -> bool {
        // SAFETY: the mapping table frees only blocks it allocated through
        // `alloc` above, once their entry is gone.
        unsafe {
            self.offload
                .dev_free(self.dev, DevicePtr::from_raw(device_ptr as *mut c_void))
        }
        .is_ok()
    }
    unsafe fn submit(&self, device_ptr: usize, host_ptr: usize, size: usize, name: usize) -> bool {
        self.offload
            .info_transfer(self.dev, true, host_ptr, device_ptr, size as i64, name);
        self.offload
            .traced_submit(self.dev, device_ptr, host_ptr, size, || {
                // SAFETY: the trait's `# Safety`: `host_ptr..host_ptr+size`
                // is readable; `device_ptr` is device memory this table got
                // from our `alloc`, i.e. of `self.dev`.
                unsafe {
                    self.dev.ops.submit(
                        DevicePtr::from_raw(device_ptr as *mut c_void),
                        host_ptr as *const c_void,
                        size,
                    )
                }
            })
            .is_ok()
    }
    fn on_event(&self, event: &MapEvent) {
        self.offload.info_map_event(self.dev.id, event);
    }
}
