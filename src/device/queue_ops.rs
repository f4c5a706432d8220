//! Operations on a plugin queue (`__tgt_async_info`) and its events: what
//! the typed API's [`crate::Queue`] and [`crate::Event`] are built on.
//!
//! Each operation uses the plugin's `_async` entry with the caller's queue
//! when the plugin has one, so a GPU plugin runs it in stream order; a
//! plugin without it runs the operation synchronously, which is a valid
//! (fully ordered) queue. Events use the plugin's event entries; a plugin
//! without them gets host-side events: recording one synchronises the
//! queue, so the event is complete when it exists.
use super::{to_i64, Device, DevicePtr, PluginOp};
use crate::abi::plugin::{KernelArgType, OptionalEntry};
use crate::abi::{self, AsyncInfo};
use crate::launch::RegionLaunch;
use crate::{Error, Result};
use omptarget_plugin_kit::entry_bodies::INLINE_ARGS;
use std::ffi::c_void;

/// `n` zero offsets: on the stack for up to [`INLINE_ARGS`] arguments (so a
/// common launch allocates none), else in `heap`.
fn zero_offsets<'a>(
    n: usize,
    inline: &'a mut [isize; INLINE_ARGS],
    heap: &'a mut Vec<isize>,
) -> &'a mut [isize] {
    if n <= INLINE_ARGS {
        &mut inline[..n]
    } else {
        heap.resize(n, 0);
        heap
    }
}

/// A plugin event, or none: then the event completed when it was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawEvent(pub(crate) *mut c_void);

/// A live [`crate::Queue`]'s boxed plugin queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueuePtr(pub(crate) *mut AsyncInfo);
// SAFETY: an address the device only compares, and uses at teardown, when
// no handle can exist any more (they borrow the runtime).
unsafe impl Send for QueuePtr {}

impl Device {
    /// A long-lived queue on this device ([`crate::Queue`]).
    pub fn queue(&self) -> Result<crate::Queue<'_>> {
        crate::Queue::new(self)
    }

    pub(crate) fn register_queue(&self, info: *mut AsyncInfo) {
        crate::sync::lock(&self.queues).push(QueuePtr(info));
    }

    pub(crate) fn unregister_queue(&self, info: *mut AsyncInfo) {
        crate::sync::lock(&self.queues).retain(|q| q.0 != info);
    }

    /// Before the drain: synchronise every queue a [`crate::Queue`] never
    /// dropped still holds, free its box, and list it as the user's leak.
    pub(crate) fn teardown_forgotten_queues(&self, report: &mut crate::ShutdownReport) {
        let queues = std::mem::take(&mut *crate::sync::lock(&self.queues));
        for QueuePtr(info) in queues {
            // SAFETY: a forgotten queue's box: its handle borrowed the
            // runtime, which the teardown owns now, so nobody else can
            // use it; freed once (taken out of the list).
            let mut info = unsafe { Box::from_raw(info) };
            let had_work = !info.queue.is_null();
            // SAFETY: a `Queue`'s own box, whose queue only this
            // device's plugin set.
            let outcome = match unsafe { self.synchronize_queue(&mut info) } {
                Ok(()) => crate::StepOutcome::Done,
                Err(err) => crate::StepOutcome::Failed(err.to_string()),
            };
            report
                .leaked_queues
                .push(crate::shutdown_report::LeakedQueue {
                    device: self.id,
                    plugin: self.plugin.name().to_owned(),
                    had_work,
                    outcome,
                });
        }
    }

    /// The time between two completed plugin events of this device.
    pub(crate) fn event_elapsed(
        &self,
        start: RawEvent,
        end: RawEvent,
    ) -> Result<std::time::Duration> {
        let local = self.local_id;
        if !self
            .plugin
            .call(|e| e.exports(OptionalEntry::EventElapsedTime))?
        {
            return Err(Error::Unsupported {
                plugin: self.plugin.name().to_owned(),
                what: "event timing (it has no __tgt_rtl_event_elapsed_time)",
            });
        }
        let mut ms = 0f32;
        // SAFETY: two events this device created; `ms` is writable.
        let code = self
            .plugin
            .call(|e| unsafe { e.event_elapsed_time(local, start.0, end.0, &mut ms) })?
            .unwrap_or(abi::OFFLOAD_FAIL);
        self.check("event_elapsed_time", code)?;
        Ok(std::time::Duration::from_secs_f64(
            f64::from(ms.max(0.0)) / 1000.0,
        ))
    }

    /// Copy `size` bytes host -> device on `queue`.
    ///
    /// # Safety
    /// `src` stays readable for `size` bytes and `dst..dst+size` is device
    /// memory of this device, until `queue` is synchronised.
    pub(crate) unsafe fn submit_on(
        &self,
        queue: &mut AsyncInfo,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
    ) -> Result<()> {
        self.ensure_initialized()?;
        let size64 = to_i64(size)?;
        let local = self.local_id;
        let op = PluginOp::Submit {
            device: local,
            dst: dst.as_ptr(),
            src: src as *mut c_void,
            size: size64,
        };
        // SAFETY: per this function's contract.
        let code = unsafe { self.run_on(queue, op) }?;
        self.check("data_submit_async", code)
    }

    /// Copy `size` bytes device -> host on `queue`. Public for the OpenMP
    /// layer (a data end's copies back complete together, as LLVM's
    /// `AsyncInfo` makes them); the typed API's [`crate::Queue`] is the
    /// user's way.
    ///
    /// # Safety
    /// `dst` stays writable for `size` bytes (and unread by the host) and
    /// `src..src+size` is device memory of this device, until `queue` is
    /// synchronised; `queue` is as [`Device::synchronize_queue`] asks.
    #[doc(hidden)]
    pub unsafe fn retrieve_on(
        &self,
        queue: &mut AsyncInfo,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<()> {
        // Queued: the span is the copy's start (the plugin call that
        // queues it); the wait is the queue's synchronisation.
        let _span = crate::profile::span(crate::profile::Kind::TransferFromDevice, "retrieve")
            .map(|s| s.device(self.id).bytes(size));
        self.ensure_initialized()?;
        let size64 = to_i64(size)?;
        let op = PluginOp::Retrieve {
            device: self.local_id,
            dst,
            src: src.as_ptr(),
            size: size64,
        };
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "data_retrieve");
        // SAFETY: per this function's contract.
        let code = unsafe { self.run_on(queue, op) }?;
        self.check("data_retrieve_async", code)
    }

    /// Copy `size` bytes from this device's `src` to `dst_device`'s `dst`
    /// on `queue` (this device's): straight when the plugin can exchange
    /// data between the two, else through a host buffer (synchronously).
    ///
    /// # Safety
    /// Both ranges are device memory of their devices, `size` bytes long,
    /// until `queue` is synchronised.
    pub(crate) unsafe fn copy_to_device_on(
        &self,
        queue: &mut AsyncInfo,
        src: DevicePtr,
        dst_device: &Device,
        dst: DevicePtr,
        size: usize,
    ) -> Result<()> {
        self.ensure_initialized()?;
        dst_device.ensure_initialized()?;
        if self.can_exchange_with(dst_device) {
            let op = PluginOp::Exchange {
                src_device: self.local_id,
                src: src.as_ptr(),
                dst_device: dst_device.local_id,
                dst: dst.as_ptr(),
                size: to_i64(size)?,
            };
            // SAFETY: per this function's contract.
            let code = unsafe { self.run_on(queue, op) }?;
            return self.check("data_exchange_async", code);
        }
        // Through the host: everything queued before must have happened.
        // SAFETY: `queue` is empty or set by this device's plugin
        // (this function's contract, or one of the crate's own queues).
        unsafe { self.synchronize_queue(queue) }?;
        let mut staging = vec![0u8; size];
        // SAFETY: `staging` holds `size` bytes; the ranges per the contract.
        unsafe {
            self.retrieve(staging.as_mut_ptr().cast(), src, size)?;
            dst_device.submit(dst, staging.as_ptr().cast(), size)
        }
    }

    // The raw layer (docs/openmp.md): the MPI device server runs its
    // clients' typed launches through it.
    #[doc(hidden)]
    /// Run a kernel whose C parameters are `types` and wait for it
    /// (`__tgt_rtl_run_typed_region`).
    ///
    /// # Safety
    /// As for the queued form: `entry` is a kernel of an image loaded on
    /// this device whose C parameters are `types`, and `args` hold its
    /// values (each in the low bytes of its slot).
    pub unsafe fn run_typed_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        types: &[KernelArgType],
        launch: RegionLaunch,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.run_typed_on(None, entry, args, types, launch) }
    }

    /// Run a kernel on `queue` (`None`: run and wait). With the plugin's
    /// `run_typed_region` every C scalar type is passed as such; without
    /// it only pointer-sized arguments can be passed, and others are
    /// refused. More teams or threads than the device runs in one launch
    /// are refused too ([`Device::check_launch`]).
    ///
    /// # Safety
    /// `entry` is a kernel of an image loaded on this device whose C
    /// parameters are `types`; `args` hold its values (each in the low
    /// bytes of its slot), and every device address among them stays
    /// valid for what the kernel does until the queue is synchronised.
    pub(crate) unsafe fn run_typed_on(
        &self,
        queue: Option<&mut AsyncInfo>,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        types: &[KernelArgType],
        launch: RegionLaunch,
    ) -> Result<()> {
        if args.len() != types.len() {
            return Err(Error::InvalidArgument(format!(
                "{} arguments but {} types",
                args.len(),
                types.len()
            )));
        }
        self.check_launch(launch)?;
        if !self
            .plugin
            .call(|e| e.exports(OptionalEntry::RunTypedRegion))?
        {
            if let Some(other) = types.iter().find(|t| **t != KernelArgType::Pointer) {
                return Err(Error::Unsupported {
                    plugin: self.plugin.name().to_owned(),
                    what: match other {
                        KernelArgType::F32 | KernelArgType::F64 => {
                            "floating-point kernel arguments (it has no __tgt_rtl_run_typed_region)"
                        }
                        _ => "kernel arguments narrower than a pointer (it has no __tgt_rtl_run_typed_region)",
                    },
                });
            }
            // The blocking launch must not overtake what is queued.
            if let Some(queue) = queue {
                // SAFETY: `queue` is empty or set by this device's plugin
                // (this function's contract, or one of the crate's own queues).
                unsafe { self.synchronize_queue(queue) }?;
            }
            let (mut inline, mut heap) = ([0isize; INLINE_ARGS], Vec::new());
            let offsets = zero_offsets(args.len(), &mut inline, &mut heap);
            // SAFETY: per this function's contract (all pointer-sized).
            return unsafe { self.run_region(entry, args, offsets, launch) };
        }
        self.ensure_initialized()?;
        let num_args = i32::try_from(args.len())
            .map_err(|_| Error::InvalidArgument(format!("{} arguments", args.len())))?;
        let (mut inline, mut heap) = ([0isize; INLINE_ARGS], Vec::new());
        let offsets = zero_offsets(args.len(), &mut inline, &mut heap);
        // `KernelArgType` is `repr(u8)`: the slice already is the byte codes.
        let codes = types.as_ptr().cast::<u8>();
        let (num_teams, thread_limit, tripcount) = match launch {
            RegionLaunch::Single => (-1, 0, 0),
            RegionLaunch::Teams {
                num_teams,
                thread_limit,
                loop_tripcount,
            } => (num_teams.max(0), thread_limit, loop_tripcount),
        };
        let local = self.local_id;
        let queue = queue.map_or(std::ptr::null_mut(), |q| q as *mut AsyncInfo);
        let code = self.plugin.launch(|e| {
            // SAFETY: per this function's contract; the arrays hold
            // `num_args` elements each.
            unsafe {
                e.run_typed_region(
                    local,
                    entry,
                    args.as_mut_ptr(),
                    offsets.as_mut_ptr(),
                    codes,
                    num_args,
                    num_teams,
                    thread_limit,
                    tripcount,
                    queue,
                )
            }
            .unwrap_or(abi::OFFLOAD_FAIL)
        })?;
        self.check("run_typed_region", code)
    }

    /// Run `op` on `queue` ([`PluginOp::run_on`]); with a plugin without
    /// its `_async` entry, `queue` is synchronised first, so that the
    /// blocking entry does not overtake what is queued already.
    ///
    /// # Safety
    /// As [`PluginOp::run_on`]: `op`'s arguments stay valid until `queue`
    /// is synchronised, and `queue` is empty or set by this device's plugin.
    unsafe fn run_on(&self, queue: &mut AsyncInfo, op: PluginOp) -> Result<i32> {
        let exported = self.plugin.exported();
        if !op.has_queued_entry(exported) {
            // SAFETY: per this function's contract.
            unsafe { self.synchronize_queue(queue) }?;
        }
        // SAFETY: per this function's contract.
        self.plugin
            .call(|e| unsafe { op.run_on(e, exported, queue) })
    }

    /// Wait for everything on `queue` (`synchronize`), which also gives the
    /// queue back to the plugin. A queue the plugin never set needs nothing.
    /// Public for the OpenMP layer, as [`Device::retrieve_on`].
    ///
    /// # Safety
    /// `queue.queue` is null, or a queue this device's plugin set (through
    /// an `_async` entry of this device) and that was not synchronised
    /// since: the plugin takes it for its own (CUDA's for a `CUstream`)
    /// and uses it. Hidden or not, a bad one is undefined behaviour, so
    /// this is `unsafe` (the typed API's [`crate::Queue`] is the safe way).
    ///
    /// ```compile_fail
    /// # fn f(device: &omptarget::Device) {
    /// let mut queue = omptarget::abi::AsyncInfo { queue: 0xdead_beef as _ };
    /// let _ = device.synchronize_queue(&mut queue); // needs `unsafe`
    /// # }
    /// ```
    #[doc(hidden)]
    pub unsafe fn synchronize_queue(&self, queue: &mut AsyncInfo) -> Result<()> {
        if queue.queue.is_null() {
            return self.plugin.call(|_| ());
        }
        let local = self.local_id;
        let code = self.plugin.call(|e| {
            let _call = crate::profile::span(crate::profile::Kind::Plugin, "synchronize");
            // SAFETY: `queue` was set by this plugin for this device.
            unsafe { e.synchronize(local, queue) }.unwrap_or(abi::OFFLOAD_SUCCESS)
        })?;
        self.check("synchronize", code)
    }

    /// Record an event after everything queued so far on `queue`.
    pub(crate) fn record_event_on(&self, queue: &mut AsyncInfo) -> Result<RawEvent> {
        self.ensure_initialized()?;
        let local = self.local_id;
        let has_events = self.plugin.call(|e| {
            e.exports(OptionalEntry::CreateEvent)
                && e.exports(OptionalEntry::RecordEvent)
                && e.exports(OptionalEntry::DestroyEvent)
        })?;
        if !has_events {
            // Host-side event: complete once everything before it is.
            // SAFETY: `queue` is empty or set by this device's plugin
            // (this function's contract, or one of the crate's own queues).
            unsafe { self.synchronize_queue(queue) }?;
            return Ok(RawEvent(std::ptr::null_mut()));
        }
        let mut event = std::ptr::null_mut();
        // SAFETY: `event` is a writable slot.
        let code = self
            .plugin
            .call(|e| unsafe { e.create_event(local, &mut event) })?
            .unwrap_or(abi::OFFLOAD_FAIL);
        self.check("create_event", code)?;
        // SAFETY: a fresh event of this device; `queue` is this device's.
        let code = self
            .plugin
            .call(|e| unsafe { e.record_event(local, event, queue) })?
            .unwrap_or(abi::OFFLOAD_FAIL);
        if let Err(err) = self.check("record_event", code) {
            // SAFETY: created above, recorded nowhere.
            let _ = self
                .plugin
                .call(|e| unsafe { e.destroy_event(local, event) });
            return Err(err);
        }
        Ok(RawEvent(event))
    }

    /// Make `queue` wait for `event` (of this device's plugin).
    pub(crate) fn wait_event_on(&self, queue: &mut AsyncInfo, event: RawEvent) -> Result<()> {
        if event.0.is_null() {
            return Ok(());
        }
        let local = self.local_id;
        // SAFETY: an event of this plugin; `queue` is this device's.
        let Some(code) = self
            .plugin
            .call(|e| unsafe { e.wait_event(local, event.0, queue) })?
        else {
            // Its events came from `create_event`, so it has them all, or
            // is broken: wait on the host instead.
            return self.sync_event(event);
        };
        self.check("wait_event", code)
    }

    /// Block until `event` has happened.
    pub(crate) fn sync_event(&self, event: RawEvent) -> Result<()> {
        if event.0.is_null() {
            return Ok(());
        }
        let local = self.local_id;
        // SAFETY: an event this device created.
        let Some(code) = self
            .plugin
            .call(|e| unsafe { e.sync_event(local, event.0) })?
        else {
            return Err(Error::Unsupported {
                plugin: self.plugin.name().to_owned(),
                what: "waiting for an event on the host (it has no __tgt_rtl_sync_event)",
            });
        };
        self.check("sync_event", code)
    }

    /// Destroy `event` (after it is no longer waited on).
    pub(crate) fn destroy_event(&self, event: RawEvent) -> Result<()> {
        if event.0.is_null() {
            return Ok(());
        }
        let local = self.local_id;
        // SAFETY: an event this device created, destroyed once.
        let code = self
            .plugin
            .call(|e| unsafe { e.destroy_event(local, event.0) })?
            .unwrap_or(abi::OFFLOAD_SUCCESS);
        self.check("destroy_event", code)
    }

    /// True when both devices are served by the same plugin (so an event
    /// of one can be waited for on a queue of the other).
    pub(crate) fn same_plugin(&self, other: &Device) -> bool {
        std::sync::Arc::ptr_eq(&self.plugin, &other.plugin)
    }
}
