//! Queues and events in a scope ([`scope`], [`Queue`], [`Event`]).
use super::kernel::Kernel;
use super::params::{
    ArgSlot, BoundedSignature, KernelSignature, Ptr, PtrMut, QueuedKernelArg, QueuedLaunchArgs,
    Slice, SliceMut,
};
use super::{DeviceBuffer, DeviceCopy};
use crate::abi::AsyncInfo;
use crate::device::queue_ops::RawEvent;
use crate::{Device, DevicePtr, Error, LaunchConfig, Result};
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
/// let mut buffer = DeviceBuffer::<u32>::new(device, 4)?;
/// omptarget::scope(|s| {
///     let queue = s.queue(device)?;
///     let lent = s.bind(&mut buffer); // written by the queue: lent to the scope
///     queue.copy_to_device(lent, &input)?;
///     queue.copy_to_host(&mut output, lent)?;
///     Ok::<_, omptarget::Error>(())
/// })?;
/// assert_eq!(output, input); // the scope waited for the queue
/// # drop(buffer); runtime.shutdown();
/// # Ok::<(), omptarget::Error>(())
/// ```
pub fn scope<'env, R, E: From<Error>>(
    f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> std::result::Result<R, E>,
) -> std::result::Result<R, E> {
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

    /// Lend `buffer` to the scope for queued writes (copies into it,
    /// kernels writing it): exclusively, until the scope ends, so no other
    /// thread can read or write it while a queue may.
    pub fn bind<T: DeviceCopy>(
        &'scope self,
        buffer: &'scope mut DeviceBuffer<'_, T>,
    ) -> ScopedBuffer<'scope, T> {
        ScopedBuffer {
            device: buffer.device(),
            ptr: buffer.device_ptr(),
            len: buffer.len(),
            _lent: PhantomData,
        }
    }

    /// Wait for every queue, then destroy every event (once, at the end of
    /// [`scope`], also when the closure panicked).
    ///
    /// A queue that cannot be synchronised may still be copying into host
    /// memory the scope is about to release; returning would make that a
    /// use after free, so the process aborts instead (with the reason). A
    /// plugin already destroyed runs nothing, so that case is an error.
    fn finish(&self) -> Result<()> {
        let mut first_error = None;
        for (device, queue) in self.queues.borrow_mut().iter_mut() {
            let synced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                device.synchronize_queue(queue)
            }));
            match synced {
                Ok(Ok(())) => {}
                Ok(Err(err @ Error::PluginDead { .. })) => {
                    first_error.get_or_insert(err);
                }
                Ok(Err(err)) => abort_unsynchronised(device, &err),
                Err(_) => abort_unsynchronised(device, &"a panic"),
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

/// See [`Scope::finish`].
fn abort_unsynchronised(device: &Device, why: &dyn std::fmt::Display) -> ! {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "omptarget: fatal: a queue on device {} could not be synchronised at the end of its scope ({why}); \
         it may still use host memory the scope would release, so the process aborts",
        device.id()
    );
    std::process::abort()
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("queues", &self.queues.borrow().len())
            .field("events", &self.events.borrow().len())
            .finish()
    }
}

/// A device buffer lent to a [`Scope`] with [`Scope::bind`]: what queued
/// copies write into and queued kernels write through ([`crate::PtrMut`]).
/// The buffer stays exclusively borrowed until the scope has waited for
/// every queue.
pub struct ScopedBuffer<'scope, T: DeviceCopy> {
    device: &'scope Device,
    ptr: DevicePtr,
    len: usize,
    /// The exclusive loan, and not `Send`: only the scope's thread queues.
    _lent: PhantomData<(&'scope mut T, *const ())>,
}

impl<T: DeviceCopy> Clone for ScopedBuffer<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for ScopedBuffer<'_, T> {}

impl<T: DeviceCopy> std::fmt::Debug for ScopedBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedBuffer")
            .field("device", &self.device.id())
            .field("len", &self.len)
            .finish()
    }
}

/// What a queued copy may read from: a `&DeviceBuffer` (shared: nobody
/// can write it meanwhile) or a [`ScopedBuffer`].
pub trait QueueSource<'scope, T: DeviceCopy>: Copy + sealed::Sealed {
    /// (device, address, length)
    #[doc(hidden)]
    fn parts(self) -> (&'scope Device, DevicePtr, usize);
}

mod sealed {
    pub trait Sealed {}
}

impl<T: DeviceCopy> sealed::Sealed for &DeviceBuffer<'_, T> {}
impl<'scope, T: DeviceCopy> QueueSource<'scope, T> for &'scope DeviceBuffer<'_, T> {
    fn parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device(), self.device_ptr(), self.len())
    }
}
impl<T: DeviceCopy> sealed::Sealed for ScopedBuffer<'_, T> {}
impl<'scope, T: DeviceCopy> QueueSource<'scope, T> for ScopedBuffer<'scope, T> {
    fn parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device, self.ptr, self.len)
    }
}

/// A lent buffer for any buffer parameter, reading or writing.
macro_rules! scoped_args {
    ($($param:ident: writes $writes:expr, slice $slice:expr;)*) => { $(
        impl<T: DeviceCopy> QueuedKernelArg<$param<T>> for ScopedBuffer<'_, T> {
            fn queued_slot(&self) -> ArgSlot {
                ArgSlot::buffer::<T>(self.device, self.ptr.addr(), self.len, $writes, $slice)
            }
        }
    )* };
}
scoped_args! {
    Ptr: writes false, slice false;
    Slice: writes false, slice true;
    PtrMut: writes true, slice false;
    SliceMut: writes true, slice true;
}

/// Values `offset..offset + len` of a buffer of `buffer_len`, if in range.
fn range_in(buffer_len: usize, offset: usize, len: usize) -> Result<std::ops::Range<usize>> {
    match offset.checked_add(len) {
        Some(end) if end <= buffer_len => Ok(offset..end),
        _ => Err(Error::InvalidArgument(format!(
            "values {offset}..{offset}+{len} are not within the buffer of {buffer_len} values"
        ))),
    }
}

/// The device address of value `index` of a buffer of `T` at `ptr`.
fn element<T>(ptr: DevicePtr, index: usize) -> DevicePtr {
    DevicePtr::from_raw(
        ptr.as_ptr()
            .wrapping_byte_add(index * std::mem::size_of::<T>()),
    )
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
///     Ok::<_, omptarget::Error>(())
/// })?;
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// A buffer lent to the scope for queued writes cannot be used elsewhere
/// until the scope ends:
///
/// ```compile_fail,E0502
/// # use omptarget::{Config, DeviceBuffer, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// let mut buffer = DeviceBuffer::<f32>::new(device, 4)?;
/// let input = vec![1.0f32; 4];
/// omptarget::scope(|s| {
///     let lent = s.bind(&mut buffer);
///     s.queue(device)?.copy_to_device(lent, &input)?;
///     let _ = buffer.to_vec(); // error: lent to the scope
///     Ok::<_, omptarget::Error>(())
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
/// A buffer that queued operations write (copies into it, kernels writing
/// through [`crate::PtrMut`]) is lent to the scope with [`Scope::bind`]:
/// exclusively, so no other thread reads or writes it until the scope has
/// waited. Buffers only read may be passed as `&DeviceBuffer`. Within the
/// scope, the queues order their operations; two queues of one scope that
/// touch a lent buffer without an event between them race on device
/// memory, as two CUDA streams do (the values are then unspecified; on the
/// host plugin every queued operation runs on the scope's own thread, one
/// after the other, so host memory is never raced).
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

    fn check_device(&self, device: &Device) -> Result<()> {
        if std::ptr::eq(device, self.device) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "the buffer is on device {}{}, the queue on device {}",
                device.id(),
                if device.id() == self.device.id() {
                    " of another runtime"
                } else {
                    ""
                },
                self.device.id()
            )))
        }
    }

    /// Queue a copy of `src` into `dst` (same length).
    pub fn copy_to_device<T: DeviceCopy>(
        &self,
        dst: ScopedBuffer<'scope, T>,
        src: &'scope [T],
    ) -> Result<()> {
        if dst.len != src.len() {
            return Err(Error::LengthMismatch {
                device_len: dst.len,
                host_len: src.len(),
            });
        }
        self.copy_to_device_at(dst, 0, src)
    }

    /// Queue a copy of `src` into `dst`'s values from `offset` on.
    pub fn copy_to_device_at<T: DeviceCopy>(
        &self,
        dst: ScopedBuffer<'scope, T>,
        offset: usize,
        src: &'scope [T],
    ) -> Result<()> {
        self.check_device(dst.device)?;
        let range = range_in(dst.len, offset, src.len())?;
        if std::mem::size_of_val(src) == 0 {
            return Ok(()); // an empty buffer has no address to copy to
        }
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: `src` is borrowed and `dst` lent exclusively for the
            // scope, which synchronises this queue before it ends; `range`
            // lies within `dst` (checked).
            unsafe {
                self.device.submit_on(
                    queue,
                    element::<T>(dst.ptr, range.start),
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
        src: impl QueueSource<'scope, T>,
    ) -> Result<()> {
        let (_, _, len) = src.parts();
        if len != dst.len() {
            return Err(Error::LengthMismatch {
                device_len: len,
                host_len: dst.len(),
            });
        }
        self.copy_to_host_at(dst, src, 0)
    }

    /// Queue a copy of `src`'s values from `offset` on into `dst`.
    pub fn copy_to_host_at<T: DeviceCopy>(
        &self,
        dst: &'scope mut [T],
        src: impl QueueSource<'scope, T>,
        offset: usize,
    ) -> Result<()> {
        let (device, ptr, len) = src.parts();
        self.check_device(device)?;
        let range = range_in(len, offset, dst.len())?;
        if std::mem::size_of_val(dst) == 0 {
            return Ok(());
        }
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: `dst` is borrowed exclusively for the scope, which
            // synchronises this queue before it ends (so the host cannot
            // read it meanwhile); any bytes are a valid `T`; `src` cannot
            // be written by anyone else meanwhile (shared or lent).
            unsafe {
                self.device.retrieve_on(
                    queue,
                    dst.as_mut_ptr().cast::<c_void>(),
                    element::<T>(ptr, range.start),
                    std::mem::size_of_val(dst),
                )
            }
        })
    }

    /// Queue a copy of the whole of `src` into `dst` (same length; `src` on
    /// this queue's device, `dst` on any device of this runtime).
    pub fn copy_between<T: DeviceCopy>(
        &self,
        dst: ScopedBuffer<'scope, T>,
        src: impl QueueSource<'scope, T>,
    ) -> Result<()> {
        let (src_device, src_ptr, src_len) = src.parts();
        self.check_device(src_device)?;
        super::checks::same_runtime("the destination", dst.device, self.device)?;
        if src_len != dst.len {
            return Err(Error::LengthMismatch {
                device_len: dst.len,
                host_len: src_len,
            });
        }
        let bytes = src_len * std::mem::size_of::<T>();
        super::checks::disjoint(src_device, src_ptr, dst.device, dst.ptr, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: both buffers are borrowed (or lent) for the scope,
            // which synchronises this queue before it ends.
            unsafe {
                self.device.copy_to_device_on(
                    queue,
                    src_ptr,
                    dst.device,
                    dst.ptr,
                    src_len * std::mem::size_of::<T>(),
                )
            }
        })
    }

    /// Queue a launch of `kernel` (on this queue's device) with `args`:
    /// buffers it reads as `&DeviceBuffer` or [`ScopedBuffer`], buffers it
    /// writes as [`ScopedBuffer`] ([`Scope::bind`]). The signature is
    /// bounded, as for [`Kernel::launch`], and the same checks are made.
    pub fn launch<S: BoundedSignature, A: QueuedLaunchArgs<S> + 'scope>(
        &self,
        kernel: &Kernel<'env, S>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: a bounded signature (`Kernel::launch`'s reasoning).
        unsafe { self.launch_unchecked(kernel, config, args) }
    }

    /// [`Queue::launch`] for any signature, bare [`Ptr`] and [`PtrMut`]
    /// parameters included.
    ///
    /// # Safety
    /// As [`Kernel::launch_unchecked`]: with these argument values, the
    /// kernel reads and writes only within the buffers passed.
    pub unsafe fn launch_unchecked<S: KernelSignature, A: QueuedLaunchArgs<S> + 'scope>(
        &self,
        kernel: &Kernel<'env, S>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        if !std::ptr::eq(kernel.device, self.device) {
            return Err(Error::InvalidArgument(format!(
                "kernel {} is loaded on device {}, the queue runs on device {}",
                kernel.name,
                kernel.device.id(),
                self.device.id()
            )));
        }
        let mut values = kernel.checked_values(&args.queued_slots())?;
        let types = S::types();
        let region = config.region()?;
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: the kernel's signature is `S` (Image::kernel's
            // contract) and stays within its buffers (ours); its buffers
            // are borrowed for the scope ('scope bound on `A`), which
            // synchronises this queue before it ends.
            unsafe {
                self.device.run_typed_on(
                    Some(queue),
                    kernel.addr as *mut c_void,
                    &mut values,
                    &types,
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
