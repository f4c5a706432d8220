//! Queues and events in a scope ([`scope`], [`Queue`], [`Event`]).
use super::kernel::{Kernel, KernelSignature, QueuedLaunchArgs};
use super::{DeviceBuffer, DeviceCopy};
use crate::abi::AsyncInfo;
use crate::device::queue_ops::RawEvent;
use crate::{Device, Error, LaunchConfig, Result};
use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;

/// Run `f` with a [`Scope`] in which queues can be made; then wait for
/// every queue and destroy every event of the scope. Returns `f`'s result,
/// or the first error of that final wait.
///
/// ```
/// use omptarget::{Config, DeviceBuffer, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// let device = runtime.device(0)?;
/// let input = vec![1u32, 2, 3, 4];
/// let mut output = vec![0u32; 4];
/// let buffer = DeviceBuffer::<u32>::new(device, 4)?;
/// omptarget::scope(|s| {
///     let queue = s.queue(device)?;
///     queue.copy_to_device(&buffer, &input)?;
///     queue.copy_to_host(&mut output, &buffer)?;
///     Ok(())
/// })?;
/// assert_eq!(output, input); // the scope waited for the queue
/// # drop(buffer); runtime.shutdown();
/// # Ok::<(), omptarget::Error>(())
/// ```
pub fn scope<'env, R>(
    f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R>,
) -> Result<R> {
    let scope = Scope {
        queues: RefCell::new(Vec::new()),
        events: RefCell::new(Vec::new()),
        _scope: PhantomData,
        _env: PhantomData,
    };
    // Like `std::thread::scope`: catch a panic of `f`, wait, then resume
    // it, so that no queued copy outlives the host memory it borrowed.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&scope)));
    let finished = scope.finish();
    match result {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(result) => {
            let value = result?;
            finished?;
            Ok(value)
        }
    }
}

/// The queues and events of one [`scope`].
pub struct Scope<'scope, 'env: 'scope> {
    /// Each queue's device and plugin queue, boxed so its address is
    /// stable (the plugin may keep it while work is queued).
    queues: RefCell<Vec<(&'env Device, Box<AsyncInfo>)>>,
    events: RefCell<Vec<(&'env Device, RawEvent)>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// A new queue on `device`.
    pub fn queue(&'scope self, device: &'env Device) -> Result<Queue<'scope, 'env>> {
        device.ensure_initialized()?;
        let mut queues = self.queues.borrow_mut();
        queues.push((
            device,
            Box::new(AsyncInfo {
                queue: std::ptr::null_mut(),
            }),
        ));
        Ok(Queue {
            scope: self,
            index: queues.len() - 1,
            device,
        })
    }

    /// Wait for every queue, then destroy every event (once, at the end of
    /// [`scope`], also when the closure panicked).
    fn finish(&self) -> Result<()> {
        let mut first_error = None;
        for (device, queue) in self.queues.borrow_mut().iter_mut() {
            if let Err(err) = device.synchronize_queue(queue) {
                first_error.get_or_insert(err);
            }
        }
        for (device, event) in self.events.borrow_mut().drain(..) {
            if let Err(err) = device.destroy_event(event) {
                first_error.get_or_insert(err);
            }
        }
        self.queues.borrow_mut().clear();
        first_error.map_or(Ok(()), Err)
    }

    fn with_queue<R>(
        &self,
        index: usize,
        f: impl FnOnce(&mut AsyncInfo) -> Result<R>,
    ) -> Result<R> {
        let mut queues = self.queues.borrow_mut();
        f(&mut queues[index].1)
    }
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("queues", &self.queues.borrow().len())
            .field("events", &self.events.borrow().len())
            .finish()
    }
}

/// One queue of a [`scope`] on one device.
#[derive(Clone, Copy)]
/// Queues and events: asynchronous copies and launches, in a scope that
/// waits for all of them before it returns.
///
/// A [`Queue`] is one plugin queue (`__tgt_async_info`: a CUDA stream on a
/// GPU). Its operations run in the order they were queued, and may still
/// run after the call that queued them returned; an [`Event`] marks a point
/// in a queue that another queue (or the host) can wait for.
///
/// Host memory a queued copy reads or writes must stay put until the copy
/// happened, so queues only exist inside [`scope`], like threads inside
/// [`std::thread::scope`]: everything a queue uses is borrowed for the
/// whole scope, and `scope` synchronises every queue before it returns
/// (also when the closure panics). No handle can leave the scope, and
/// forgetting one (`mem::forget`) changes nothing, because the scope, not
/// the handle, waits:
///
/// ```compile_fail,E0499
/// # use omptarget::{Config, DeviceBuffer, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// # let buffer = DeviceBuffer::<f32>::new(device, 4)?;
/// let mut host = vec![0.0f32; 4];
/// omptarget::scope(|s| {
///     let queue = s.queue(device)?;
///     queue.copy_to_host(&mut host, &buffer)?;
///     host[0] = 1.0; // error: `host` is borrowed until the scope ends
///     Ok(())
/// })?;
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// A queue cannot leave its scope either:
///
/// ```compile_fail
/// # use omptarget::{Config, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// let escaped = omptarget::scope(|s| s.queue(device))?; // error: lifetime
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// The host plugin runs every queued operation at once (a valid queue: it
/// is in order); a GPU plugin runs them on its stream, one to one.
///
/// Device buffers are borrowed shared by queued operations, written ones
/// included: the queue, not the borrow checker, orders them. Two queues
/// that touch one buffer without an event between them race on device
/// memory, as two CUDA streams do; the values are then unspecified, but
/// host memory is never at risk.
pub struct Queue<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    index: usize,
    device: &'env Device,
}

impl<'scope, 'env> Queue<'scope, 'env> {
    /// The device the queue runs on.
    pub fn device(&self) -> &'env Device {
        self.device
    }

    fn check_device<T: DeviceCopy>(&self, buffer: &DeviceBuffer<'_, T>) -> Result<()> {
        if buffer.device().id() == self.device.id() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "the buffer is on device {}, the queue on device {}",
                buffer.device().id(),
                self.device.id()
            )))
        }
    }

    /// Queue a copy of `src` into `dst` (same length).
    pub fn copy_to_device<T: DeviceCopy>(
        &self,
        dst: &'scope DeviceBuffer<'_, T>,
        src: &'scope [T],
    ) -> Result<()> {
        dst.check_len(src.len())?;
        self.copy_to_device_at(dst, 0, src)
    }

    /// Queue a copy of `src` into `dst`'s values from `offset` on.
    pub fn copy_to_device_at<T: DeviceCopy>(
        &self,
        dst: &'scope DeviceBuffer<'_, T>,
        offset: usize,
        src: &'scope [T],
    ) -> Result<()> {
        self.check_device(dst)?;
        let range = dst.range(offset, src.len())?;
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: `src` and `dst` are borrowed for the scope, which
            // synchronises this queue before it ends; `range` lies within
            // `dst` (checked).
            unsafe {
                self.device.submit_on(
                    queue,
                    dst.byte_ptr(range.start),
                    src.as_ptr().cast::<c_void>(),
                    std::mem::size_of_val(src),
                )
            }
        })
    }

    /// Queue a copy of `src` into `dst` (same length).
    pub fn copy_to_host<T: DeviceCopy>(
        &self,
        dst: &'scope mut [T],
        src: &'scope DeviceBuffer<'_, T>,
    ) -> Result<()> {
        src.check_len(dst.len())?;
        self.copy_to_host_at(dst, src, 0)
    }

    /// Queue a copy of `src`'s values from `offset` on into `dst`.
    pub fn copy_to_host_at<T: DeviceCopy>(
        &self,
        dst: &'scope mut [T],
        src: &'scope DeviceBuffer<'_, T>,
        offset: usize,
    ) -> Result<()> {
        self.check_device(src)?;
        let range = src.range(offset, dst.len())?;
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: `dst` is borrowed exclusively for the scope, which
            // synchronises this queue before it ends (so the host cannot
            // read it meanwhile); any bytes are a valid `T`.
            unsafe {
                self.device.retrieve_on(
                    queue,
                    dst.as_mut_ptr().cast::<c_void>(),
                    src.byte_ptr(range.start),
                    std::mem::size_of_val(dst),
                )
            }
        })
    }

    /// Queue a copy of the whole of `src` into `dst` (same length; `src` on
    /// this queue's device, `dst` on any).
    pub fn copy_between<T: DeviceCopy>(
        &self,
        dst: &'scope DeviceBuffer<'_, T>,
        src: &'scope DeviceBuffer<'_, T>,
    ) -> Result<()> {
        self.check_device(src)?;
        src.check_len(dst.len())?;
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: both buffers are borrowed for the scope, which
            // synchronises this queue before it ends.
            unsafe {
                self.device.copy_to_device_on(
                    queue,
                    src.device_ptr(),
                    dst.device(),
                    dst.device_ptr(),
                    src.size_bytes(),
                )
            }
        })
    }

    /// Queue a launch of `kernel` (on this queue's device) with `args`.
    /// Buffers are passed as `&DeviceBuffer`, written ones included.
    pub fn launch<S: KernelSignature, A: QueuedLaunchArgs<S> + 'scope>(
        &self,
        kernel: &Kernel<'env, S>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        if kernel.device.id() != self.device.id() {
            return Err(Error::InvalidArgument(format!(
                "kernel {} is loaded on device {}, the queue runs on device {}",
                kernel.name,
                kernel.device.id(),
                self.device.id()
            )));
        }
        let mut values = kernel.checked_values(args.queued_slots())?;
        let region = config.region()?;
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: the kernel's signature is `S` (Image::kernel's
            // contract); its buffers are borrowed for the scope ('scope
            // bound on `A`), which synchronises this queue before it ends.
            unsafe {
                self.device.run_typed_on(
                    Some(queue),
                    kernel.addr as *mut c_void,
                    &mut values,
                    S::TYPES,
                    region,
                )
            }
        })
    }

    /// Mark the current end of the queue: the event happens once
    /// everything queued so far has.
    pub fn record_event(&self) -> Result<Event<'scope>> {
        let raw = self
            .scope
            .with_queue(self.index, |queue| self.device.record_event_on(queue))?;
        let mut events = self.scope.events.borrow_mut();
        events.push((self.device, raw));
        Ok(Event {
            device: self.device,
            raw,
            _scope: PhantomData,
        })
    }

    /// Make everything queued after this call wait for `event` (recorded
    /// on any queue of the scope).
    pub fn wait_for(&self, event: &Event<'scope>) -> Result<()> {
        if self.device.same_plugin(event.device) {
            self.scope.with_queue(self.index, |queue| {
                self.device.wait_event_on(queue, event.raw)
            })
        } else {
            // Another plugin's event cannot enter this queue: wait on the
            // host, before anything later is queued.
            event.synchronize()
        }
    }

    /// Block until everything queued so far has completed.
    pub fn synchronize(&self) -> Result<()> {
        self.scope
            .with_queue(self.index, |queue| self.device.synchronize_queue(queue))
    }
}

impl std::fmt::Debug for Queue<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("device", &self.device.id())
            .field("index", &self.index)
            .finish()
    }
}

/// A point in a [`Queue`]; destroyed when its scope ends.
#[derive(Clone, Copy)]
pub struct Event<'scope> {
    device: &'scope Device,
    raw: RawEvent,
    _scope: PhantomData<&'scope ()>,
}

impl Event<'_> {
    /// Block until the event has happened.
    pub fn synchronize(&self) -> Result<()> {
        self.device.sync_event(self.raw)
    }
}

impl std::fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.device.id())
            .field("plugin_event", &!self.raw.0.is_null())
            .finish()
    }
}
