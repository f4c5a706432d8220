//! The CUDA backend: runs nvptx offload images on NVIDIA GPUs through the
//! CUDA driver API, with a lifecycle that releases everything it holds,
//! in order, from `deinit_device`/`deinit_plugin` only.
//!
//! [`CudaBackend`] implements the plugin kit's [`Backend`]; the cdylib
//! `ffi/plugin/cuda/rtl` exports it as `libomptarget.rtl.cuda.so`.
//!
//! # Module map
//!
//! * [`driver`]: loading `libcuda` through cudarc's raw layer
//!   (`cudarc::driver::sys`), the symbols the plugin needs, error codes; no
//!   driver means 0 devices and a debug line, never a panic.
//! * [`image`]: what an nvptx image is (a cubin, bare or in an OffloadBinary
//!   blob) and whether its SM runs on the device.
//! * [`module`]: a loaded image (`CUmodule`), its kernels and target
//!   table, and the device runtime's globals written at load.
//! * [`ctor_dtor`]: an image's device global constructors (run at load)
//!   and destructors (run before its unload).
//! * [`launch`]: grid and block sizes by LLVM's rules.
//! * `event`: CUDA events for the runtime's `__tgt_rtl_*_event` entries.
//! * [`device`]: one GPU's state between `init_device` and
//!   `deinit_device` (streams, events, blocks, the primary context) and
//!   its ordered release ([`device::DeviceState::release`]).
//!
//! The design (no driver, images, arguments, launches, queues and events,
//! memory, the teardown order, the fake driver the tests use):
//! `docs/cuda.md`.

pub mod ctor_dtor;
pub mod device;
mod device_info;
pub mod driver;
mod event;
pub mod image;
pub mod launch;
mod memory;
pub mod module;

use device::{DeviceInfo, DeviceState};
use driver::{check, CudaError};
use module::LaunchEnv;
use omptarget_abi::plugin::{device_kind, DeviceInfoKey, KernelArgType};
use omptarget_abi::{AllocKind, DeviceImage, TargetTable};
use omptarget_plugin_kit::backend::{
    Backend, DeviceId, DeviceInfoValue, ImageRef, InitCause, LoadOptions, TeamConfig,
};
use omptarget_plugin_kit::diagnostics;
use omptarget_plugin_kit::error::{PluginError, Result};
use omptarget_plugin_kit::fork::ForkLocks;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

use cudarc::driver::sys::{self, CUstream};

/// The CUDA backend; see the module docs.
pub struct CudaBackend {
    devices: Box<[CudaDevice]>,
}

/// One GPU: what the driver reports, and its state while initialised.
struct CudaDevice {
    info: DeviceInfo,
    state: Mutex<Option<DeviceState>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The backend's queue: a stream of its device's pool, lent from
/// `create_queue` until `synchronize` waits for it and gives it back.
#[derive(Debug)]
pub struct Stream(CUstream);

/// In a `__tgt_async_info` as itself (a `CUstream`), as LLVM's plugin
/// keeps it: nothing to allocate, nothing to lose when a caller never
/// synchronises (the device's release destroys the stream).
impl omptarget_plugin_kit::AsyncQueue for Stream {
    fn into_raw(self) -> *mut c_void {
        self.0.cast()
    }

    unsafe fn from_raw(raw: *mut c_void) -> Self {
        Stream(raw.cast())
    }
}

impl CudaBackend {
    fn device(&self, device: DeviceId) -> &CudaDevice {
        &self.devices[device.index()]
    }

    /// Run `op` on `device`'s context with its state locked.
    fn with_state<T>(
        &self,
        device: DeviceId,
        op: impl FnOnce(&mut DeviceState, &DeviceInfo) -> Result<T>,
    ) -> Result<T> {
        let dev = self.device(device);
        let mut guard = lock(&dev.state);
        let state = guard
            .as_mut()
            .ok_or(PluginError::DeviceNotInitialised(device.index()))?;
        // SAFETY: an initialised device's state holds its retained context.
        unsafe { device::make_current(state.context) }?;
        op(state, &dev.info)
    }

    /// Queue `op` on `queue`'s stream, with the device's state locked.
    fn enqueue(
        &self,
        device: DeviceId,
        queue: &Stream,
        op: impl FnOnce(CUstream, &mut DeviceState, &DeviceInfo) -> Result<()>,
    ) -> Result<()> {
        self.with_state(device, |state, info| op(queue.0, state, info))
    }

    /// Wait for `stream` (without the device lock) and put it back in the pool.
    fn wait_and_return(&self, device: DeviceId, stream: CUstream) -> Result<()> {
        let context = self.with_state(device, |state, _| Ok(state.context))?;
        // SAFETY: the device is initialised (read just above) and stays so
        // during an entry call: deinit_device runs under the plugin's
        // write lock, never beside another entry.
        unsafe { device::make_current(context) }?;
        // SAFETY: a stream of this device, lent to this call only, and the
        // device stays initialised during an entry call (the runtime's contract).
        let waited = check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(stream)
        });
        let returned = self.with_state(device, |state, _| Ok(state.give_stream(stream)))?;
        waited?;
        Ok(returned?)
    }

    /// Launch `entry` on `queue`; `typed` for `run_typed_region` (the Rust
    /// API), whose teams and threads are run as asked or refused
    /// ([`launch::typed_geometry`]), where LLVM's launch entries clamp them.
    ///
    /// # Safety
    /// `args` are what the kernel expects; device memory among them stays
    /// valid until the stream is synchronised.
    unsafe fn launch(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        teams: Option<TeamConfig>,
        typed: bool,
        queue: &Stream,
    ) -> Result<()> {
        let shared = module::dynamic_shared_memory();
        self.enqueue(device, queue, |stream, state, info| {
            let kernel = state
                .modules
                .iter()
                .find_map(|m| m.kernel(entry.as_ptr()))
                .ok_or_else(|| {
                    PluginError::InvalidArgument(format!(
                        "{entry:p} is not a kernel of an image loaded on device {device}"
                    ))
                })?;
            let (function, launch_env) = (kernel.function, kernel.launch_env);
            let (blocks, threads) = if typed {
                launch::typed_geometry(teams, kernel.limits, info.limits).map_err(|why| {
                    PluginError::InvalidArgument(format!("kernel {}: {why}", kernel.name))
                })?
            } else {
                launch::geometry(teams, kernel.limits, info.limits)
            };
            diagnostics::debug(
                CudaBackend::NAME,
                &format_args!(
                    "device {device}: launching {} ({:?}) with {blocks} block(s) of {threads} thread(s), {} argument(s)",
                    kernel.name,
                    kernel.limits.mode,
                    args.len()
                ),
            );
            // cuLaunchKernel wants a pointer to each argument's value; each
            // value sits in its pointer-sized slot (a scalar in its low
            // bytes, which is where a little-endian C parameter reads it).
            let mut inline = [std::ptr::null_mut::<c_void>(); omptarget_plugin_kit::entry_bodies::INLINE_ARGS];
            let mut heap = Vec::new();
            let params: &mut [*mut c_void] = if args.len() <= inline.len() {
                &mut inline[..args.len()]
            } else {
                heap.resize(args.len(), std::ptr::null_mut());
                &mut heap
            };
            for (param, arg) in params.iter_mut().zip(args) {
                *param = arg as *const *mut c_void as *mut c_void;
            }
            // A clang 19/22 kernel's implicit first argument: the OpenMP
            // layer passes a null placeholder, LLVM's plugins a launch
            // environment (all ones when the kernel has no reduction).
            let replaced = if launch_env != LaunchEnv::None
                && args.first().is_some_and(|a| a.is_null())
            {
                Some(match launch_env {
                    LaunchEnv::Reduction {
                        data_size,
                        buffer_length,
                    } => {
                        let bytes = data_size as usize * buffer_length as usize;
                        // SAFETY: `stream` is this device's (from `enqueue`),
                        // its context made current by `with_state`.
                        unsafe { state.launch_environment(stream, bytes)? as *mut c_void }
                    }
                    _ => usize::MAX as *mut c_void,
                })
            } else {
                None
            };
            let mut first = replaced.unwrap_or(std::ptr::null_mut());
            if replaced.is_some() {
                params[0] = &mut first as *mut *mut c_void as *mut c_void;
            }
            // SAFETY: a function of a module loaded in this context; the
            // parameters point at `args`, which outlive the call (the driver
            // copies them at launch); the kernel's own contract is the caller's.
            check("cuLaunchKernel", unsafe {
                sys::cuLaunchKernel(
                    function,
                    blocks,
                    1,
                    1,
                    threads,
                    1,
                    1,
                    shared,
                    stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            })?;
            Ok(())
        })
    }

    /// `cuMemGetInfo_v2` in `device`'s context: its free bytes, `None`
    /// while the device is not initialised (the call needs a context, and
    /// a query retains none).
    fn free_memory(&self, device: DeviceId) -> Result<Option<u64>> {
        let dev = self.device(device);
        let guard = lock(&dev.state);
        let Some(state) = guard.as_ref() else {
            return Ok(None);
        };
        // SAFETY: an initialised device's state holds its retained context.
        unsafe { device::make_current(state.context) }?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: two writable out-parameters; the device's context is current.
        check("cuMemGetInfo_v2", unsafe {
            sys::cuMemGetInfo_v2(&mut free, &mut total)
        })?;
        Ok(Some(free as u64))
    }

    /// Release `device`'s state, if initialised; reports what it released.
    fn release_device(&self, device: usize) -> Result<()> {
        let dev = &self.devices[device];
        let Some(state) = lock(&dev.state).take() else {
            return Ok(());
        };
        let (done, result) = state.release(dev.info.handle);
        diagnostics::debug(
            Self::NAME,
            &format_args!(
                "device {device}: released {} module(s) ({} device destructor(s) run), {} block(s) ({} bytes) and {} event(s) the runtime left, {} stream(s) ({} queue(s) never synchronised), then the primary context",
                done.modules, done.dtors, done.blocks, done.bytes, done.events, done.streams, done.unsynchronised_queues
            ),
        );
        if result.is_ok() && !done.dtor_errors.is_empty() {
            return Err(PluginError::Backend(format!(
                "device {device}: {}; everything else was released",
                done.dtor_errors.join("; ")
            )));
        }
        match result {
            Err(e) if e.is_deinitialized() => Err(PluginError::Backend(format!(
                "device {device}: the CUDA driver was already deinitialised ({e}); what it held went with it"
            ))),
            Err(e) => Err(e.into()),
            Ok(()) => Ok(()),
        }
    }

    fn copy(
        &self,
        device: DeviceId,
        queue: &Stream,
        call: &'static str,
        op: impl FnOnce(CUstream) -> sys::CUresult,
    ) -> Result<()> {
        self.enqueue(device, queue, |stream, _, _| Ok(check(call, op(stream))?))
    }
}

impl Backend for CudaBackend {
    const NAME: &'static str = "cuda";
    type Queue = Stream;

    fn init(_cause: InitCause) -> Result<Self> {
        let count = match driver::open() {
            Ok(count) => count,
            Err(why) => {
                diagnostics::debug(Self::NAME, &why);
                return Ok(Self {
                    devices: Box::new([]),
                });
            }
        };
        let mut devices = Vec::with_capacity(count);
        for ordinal in 0..count {
            match DeviceInfo::query(ordinal) {
                Ok(info) => devices.push(CudaDevice {
                    info,
                    state: Mutex::new(None),
                }),
                Err(e) => {
                    // Devices are numbered densely: stop at the first one
                    // the driver cannot describe.
                    diagnostics::debug(
                        Self::NAME,
                        &format_args!("device {ordinal} skipped, and any after it: {e}"),
                    );
                    break;
                }
            }
        }
        diagnostics::debug(
            Self::NAME,
            &format_args!(
                "CUDA driver {} with {} usable device(s)",
                driver::version(),
                devices.len()
            ),
        );
        Ok(Self {
            devices: devices.into_boxed_slice(),
        })
    }

    fn deinit(self) -> Result<()> {
        let mut result = Ok(());
        for device in 0..self.devices.len() {
            if let Err(e) = self.release_device(device) {
                result = result.and(Err(e));
            }
        }
        result
    }

    fn number_of_devices(&self) -> usize {
        self.devices.len()
    }

    fn is_valid_binary(&self, image: &ImageRef<'_>) -> bool {
        let cubin = match image::parse(image.bytes) {
            Ok(cubin) => cubin,
            Err(why) => {
                diagnostics::debug(Self::NAME, &format_args!("image rejected: {why}"));
                return false;
            }
        };
        // Valid if any device runs it; load_binary checks the one it loads on.
        let runs = self.devices.iter().any(|d| cubin.sm.runs_on(d.info.sm));
        if !runs {
            diagnostics::debug(
                Self::NAME,
                &format_args!(
                    "image rejected: built for {}, which no device here runs",
                    cubin.sm
                ),
            );
        }
        runs
    }

    fn init_device(&self, device: DeviceId) -> Result<()> {
        let dev = self.device(device);
        let mut state = lock(&dev.state);
        if state.is_none() {
            *state = Some(DeviceState::create(&dev.info)?);
            diagnostics::debug(
                Self::NAME,
                &format_args!(
                    "device {device}: {} ({}, {} SMs), primary context retained",
                    dev.info.name, dev.info.sm, dev.info.multiprocessors
                ),
            );
        }
        Ok(())
    }

    fn deinit_device(&self, device: DeviceId) -> Result<()> {
        self.release_device(device.index())
    }

    /// `options.bind_now` needs nothing more: `cuModuleLoadData` links the
    /// whole module, so a reference to a symbol it lacks fails the load
    /// either way (nothing on the device is bound lazily).
    fn load_binary(
        &self,
        device: DeviceId,
        image: &ImageRef<'_>,
        _options: LoadOptions,
    ) -> Result<NonNull<TargetTable>> {
        let cubin = image::parse(image.bytes).map_err(PluginError::InvalidImage)?;
        let devices = self.devices.len();
        self.with_state(device, |state, info| {
            if !cubin.sm.runs_on(info.sm) {
                return Err(PluginError::InvalidImage(format!(
                    "the image is built for {}, device {device} is {} ({})",
                    cubin.sm, info.sm, info.name
                )));
            }
            let stream = state.take_stream()?;
            let loaded = module::load(
                stream,
                image.desc.as_ptr() as usize,
                cubin.elf,
                image.entries,
                devices,
                device.index(),
                info,
            );
            state.give_stream(stream)?;
            let loaded = loaded?;
            let table = NonNull::from(&*loaded.table);
            diagnostics::debug(
                Self::NAME,
                &format_args!(
                    "device {device}: loaded a {} cubin ({} bytes{}), {} kernel(s)",
                    cubin.sm,
                    cubin.elf.len(),
                    if cubin.wrapped {
                        ", from an OffloadBinary"
                    } else {
                        ""
                    },
                    loaded.kernels.len()
                ),
            );
            state.modules.push(loaded);
            Ok(table)
        })
    }

    fn unload_binary(&self, device: DeviceId, image: NonNull<DeviceImage>) -> Result<()> {
        let key = image.as_ptr() as usize;
        self.with_state(device, |state, _| {
            let index = state
                .modules
                .iter()
                .rposition(|m| m.key == key)
                .ok_or_else(|| {
                    PluginError::InvalidArgument(format!(
                        "image {image:p} is not loaded on device {device}"
                    ))
                })?;
            // Kernels still queued must finish before their module goes.
            // SAFETY: the device's context is current.
            check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })?;
            let module = state.modules.remove(index);
            let stream = state.take_stream()?;
            let unloaded = module.unload_after_dtors(stream);
            state.give_stream(stream)?;
            let ran = unloaded?;
            if ran > 0 {
                diagnostics::debug(
                    Self::NAME,
                    &format_args!(
                        "device {device}: ran {ran} device destructor(s) of image {image:p}"
                    ),
                );
            }
            Ok(())
        })
    }

    fn data_alloc(
        &self,
        device: DeviceId,
        size: usize,
        _host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<NonNull<c_void>> {
        self.with_state(device, |state, _| {
            let address = device::alloc(size, kind).map_err(|e: CudaError| {
                if e.is_out_of_memory() {
                    PluginError::OutOfMemory(format!("device {device}, {size} bytes: {e}"))
                } else {
                    PluginError::from(e)
                }
            })?;
            state
                .allocations
                .insert(address, device::Allocation { size, kind });
            NonNull::new(address as *mut c_void)
                .ok_or_else(|| PluginError::backend("the driver returned a null allocation"))
        })
    }

    fn data_delete(&self, device: DeviceId, tgt_ptr: NonNull<c_void>) -> Result<()> {
        self.with_state(device, |state, _| {
            let address = tgt_ptr.as_ptr() as usize;
            let allocation = state.allocations.remove(&address).ok_or_else(|| {
                PluginError::InvalidArgument(format!(
                    "{tgt_ptr:p} was not allocated on device {device} (or was freed already)"
                ))
            })?;
            Ok(device::free(address, allocation.kind)?)
        })
    }

    fn create_queue(&self, device: DeviceId) -> Result<Stream> {
        self.with_state(device, |state, _| Ok(Stream(state.take_stream()?)))
    }

    fn synchronize(&self, device: DeviceId, queue: Stream) -> Result<()> {
        // The device lock is not held while waiting, so other threads'
        // operations proceed.
        self.wait_and_return(device, queue.0)
    }

    fn synchronize_device(&self, device: DeviceId) -> Result<()> {
        self.with_state(device, |_, _| {
            // SAFETY: the device's context is current.
            Ok(check("cuCtxSynchronize", unsafe {
                sys::cuCtxSynchronize()
            })?)
        })
    }

    unsafe fn data_submit(
        &self,
        device: DeviceId,
        tgt_ptr: NonNull<c_void>,
        host_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Stream,
    ) -> Result<()> {
        self.copy(device, queue, "cuMemcpyHtoDAsync_v2", |stream| {
            // SAFETY: the caller's contract covers both ranges until the
            // queue is synchronised.
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(tgt_ptr.as_ptr() as u64, host_ptr.as_ptr(), size, stream)
            }
        })
    }

    unsafe fn data_retrieve(
        &self,
        device: DeviceId,
        host_ptr: NonNull<c_void>,
        tgt_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Stream,
    ) -> Result<()> {
        self.copy(device, queue, "cuMemcpyDtoHAsync_v2", |stream| {
            // SAFETY: as data_submit.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(host_ptr.as_ptr(), tgt_ptr.as_ptr() as u64, size, stream)
            }
        })
    }

    fn is_data_exchangable(&self, _src: DeviceId, _dst: DeviceId) -> bool {
        // Same device: a device-to-device copy; two devices: cuMemcpyPeer,
        // which the driver stages when they have no peer access.
        true
    }

    unsafe fn data_exchange(
        &self,
        src: DeviceId,
        src_ptr: NonNull<c_void>,
        dst: DeviceId,
        dst_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Stream,
    ) -> Result<()> {
        let (from, to) = (src_ptr.as_ptr() as u64, dst_ptr.as_ptr() as u64);
        if src == dst {
            return self.copy(src, queue, "cuMemcpyDtoDAsync_v2", |stream| {
                // SAFETY: as data_submit.
                unsafe { sys::cuMemcpyDtoDAsync_v2(to, from, size, stream) }
            });
        }
        let dst_context = self.with_state(dst, |state, _| Ok(state.context))?;
        self.enqueue(src, queue, |stream, state, _| {
            // SAFETY: as data_submit; both contexts are retained.
            Ok(check("cuMemcpyPeerAsync", unsafe {
                sys::cuMemcpyPeerAsync(to, dst_context, from, state.context, size, stream)
            })?)
        })
    }

    unsafe fn run_region(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[KernelArgType]>,
        teams: Option<TeamConfig>,
        queue: &mut Stream,
    ) -> Result<()> {
        // Every supported type fits its slot's low bytes, where the driver
        // reads a parameter of that size: the types need no conversion,
        // only the typed launch's geometry rules.
        let typed = types.is_some();
        // SAFETY: the caller's contract (Backend::run_region).
        unsafe { self.launch(device, entry, args, teams, typed, queue) }
    }

    fn print_device_info(&self, device: DeviceId) {
        let info = &self.device(device).info;
        println!(
            "    omptarget-rs cuda plugin, device {device}: {}, compute capability {}.{}, {} SMs x {} threads, \
             {} MiB, max {} threads per block, warp {}",
            info.name,
            info.sm.major,
            info.sm.minor,
            info.multiprocessors,
            info.threads_per_multiprocessor,
            info.total_memory >> 20,
            info.limits.max_threads_per_block,
            info.limits.warp_size
        );
    }

    fn device_info(&self, device: DeviceId, key: DeviceInfoKey) -> Result<Option<DeviceInfoValue>> {
        use DeviceInfoValue::{Number, Text};
        let info = &self.device(device).info;
        Ok(match key {
            DeviceInfoKey::Name => Some(Text(info.name.clone())),
            DeviceInfoKey::Kind => Some(Number(device_kind::CUDA_GPU)),
            DeviceInfoKey::TotalMemory => Some(Number(info.total_memory as u64)),
            DeviceInfoKey::FreeMemory => self.free_memory(device)?.map(Number),
            DeviceInfoKey::MaxTeams => Some(Number(info.limits.max_blocks.into())),
            DeviceInfoKey::MaxThreads => Some(Number(info.limits.max_threads_per_block.into())),
            // A GPU of this process.
            DeviceInfoKey::Location => None,
        })
    }

    fn lock_for_fork(&self) -> ForkLocks<'_> {
        let mut held: ForkLocks<'_> = Vec::with_capacity(self.devices.len());
        for device in self.devices.iter() {
            held.push(Box::new(lock(&device.state)));
        }
        held
    }
}
