//! Borrow-checked queued work: [`scope`], its [`ScopedQueue`]s and
//! [`ScopedBuffer`]s.
//!
//! Host memory a queued copy reads or writes must stay put until the copy
//! happened, so work that borrows anything is queued inside [`scope`],
//! like threads inside [`std::thread::scope`]: everything it uses is
//! borrowed for the whole scope, and `scope` synchronises every queue it
//! used before it returns (also when the closure panics). Forgetting a
//! handle (`mem::forget`) changes nothing, because the scope, not the
//! handle, waits. A long-lived [`crate::Queue`] joins a scope with
//! [`Scope::attach`].
use super::gate::Gate;
use super::kernel::Kernel;
use super::params::{
    ArgSlot, BoundedSignature, KernelSignature, Ptr, PtrMut, QueuedKernelArg, QueuedLaunchArgs,
    Slice, SliceMut,
};
use super::queue::{synchronize_or_abort, Event};
use super::view::{element, resolve, DeviceSlice, DeviceSliceMut};
use super::{DeviceBuffer, DeviceCopy};
use crate::abi::AsyncInfo;
use crate::{Device, DevicePtr, Error, LaunchConfig, Result};
use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::RangeBounds;

/// Run `f` with a [`Scope`] in which queued work can borrow; then wait for
/// every queue of the scope. Returns `f`'s result, or the first error of
/// that final wait.
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
///     let lent = s.bind(&mut buffer); // used twice: lent to the scope
///     queue.copy_from_host(lent, &input)?;
///     queue.copy_to_host(lent, &mut output)?;
///     Ok(())
/// })?;
/// assert_eq!(output, input); // the scope waited for the queue
/// # drop(buffer); runtime.shutdown();
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// Host memory a queued copy uses stays borrowed until the scope ends:
///
/// ```compile_fail,E0499
/// # use omptarget::{Config, DeviceBuffer, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// # let buffer = DeviceBuffer::<f32>::new(device, 4)?;
/// let mut host = vec![0.0f32; 4];
/// omptarget::scope(|s| {
///     let queue = s.queue(device)?;
///     queue.copy_to_host(&buffer, &mut host)?;
///     host[0] = 1.0; // error: `host` is borrowed until the scope ends
///     Ok(())
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
///     s.queue(device)?.copy_from_host(lent, &input)?;
///     let _ = buffer.to_vec(); // error: lent to the scope
///     Ok(())
/// })?;
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// A scoped queue cannot leave its scope:
///
/// ```compile_fail
/// # use omptarget::{Config, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// let escaped = omptarget::scope(|s| s.queue(device))?; // error: lifetime
/// # Ok::<(), omptarget::Error>(())
/// ```
pub fn scope<'env, R>(
    f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> Result<R>,
) -> Result<R> {
    let scope = Scope {
        queues: RefCell::new(Vec::new()),
        keep: RefCell::new(Vec::new()),
        launched: RefCell::new(Vec::new()),
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

/// The plugin queue behind a [`ScopedQueue`].
enum Slot {
    /// Made by [`Scope::queue`], freed with the scope.
    Own(Box<AsyncInfo>),
    /// A [`crate::Queue`]'s, borrowed exclusively for the scope
    /// ([`Scope::attach`]).
    Attached(*mut AsyncInfo),
}

/// The queues of one [`scope`], and what their work must keep alive.
pub struct Scope<'scope, 'env: 'scope> {
    /// Each queue's device and plugin queue (at a stable address: the
    /// plugin may keep it while work is queued).
    queues: RefCell<Vec<(&'env Device, Slot)>>,
    /// Staging memory of queued fills, freed after the final wait.
    keep: RefCell<Vec<Box<dyn Any>>>,
    /// (queue index, image gate): the queue holds launches of the image's
    /// kernels queued since it was last synchronised, counted by the gate
    /// as pending (its globals refuse host access) until then.
    launched: RefCell<Vec<(usize, &'env Gate)>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// A new queue on `device`, for this scope.
    pub fn queue(&'scope self, device: &'env Device) -> Result<ScopedQueue<'scope, 'env>> {
        device.ensure_initialized()?;
        let info = Box::new(AsyncInfo {
            queue: std::ptr::null_mut(),
        });
        Ok(self.add(device, Slot::Own(info)))
    }

    /// Queue borrowed work on the long-lived `queue`; the scope waits for
    /// it at its end, like for its own queues.
    pub fn attach<'rt: 'env>(
        &'scope self,
        queue: &'scope mut super::Queue<'rt>,
    ) -> ScopedQueue<'scope, 'env> {
        let device: &'env Device = queue.device();
        self.add(device, Slot::Attached(queue.async_info()))
    }

    fn add(&'scope self, device: &'env Device, slot: Slot) -> ScopedQueue<'scope, 'env> {
        let mut queues = self.queues.borrow_mut();
        queues.push((device, slot));
        ScopedQueue {
            scope: self,
            index: queues.len() - 1,
            device,
        }
    }

    /// Lend `buffer` (a `&mut DeviceBuffer` or a writable view) to the
    /// scope for queued writes: exclusively, until the scope ends, so no
    /// other code reads or writes it while a queue may. The lent handle is
    /// `Copy`, to be used by several operations.
    pub fn bind<T: DeviceCopy>(
        &'scope self,
        buffer: impl QueueDest<'scope, T>,
    ) -> ScopedBuffer<'scope, T> {
        let (device, ptr, len) = buffer.dest_parts();
        ScopedBuffer {
            device,
            ptr,
            len,
            _lent: PhantomData,
        }
    }

    /// Wait for every queue (once, at the end of [`scope`], also when the
    /// closure panicked), then free the staging memory and release the
    /// images' globals.
    ///
    /// A queue that cannot be synchronised may still be copying into host
    /// memory the scope is about to release; returning would make that a
    /// use after free, so the process aborts instead (with the reason). A
    /// plugin already destroyed runs nothing, so that case is an error.
    fn finish(&self) -> Result<()> {
        let mut first_error = None;
        for (device, slot) in self.queues.borrow_mut().iter_mut() {
            if let Err(err) =
                synchronize_or_abort(device, slot_info(slot), &"at the end of its scope")
            {
                first_error.get_or_insert(err);
            }
        }
        self.queues.borrow_mut().clear();
        self.keep.borrow_mut().clear();
        self.release_launched(|_| true);
        first_error.map_or(Ok(()), Err)
    }

    /// Count queue `index`'s launches of `gate`'s image as pending, unless
    /// they already are (before the launch is queued).
    fn note_launch(&self, index: usize, gate: &'env Gate) {
        let mut launched = self.launched.borrow_mut();
        if !launched
            .iter()
            .any(|&(i, g)| i == index && std::ptr::eq(g, gate))
        {
            gate.queue_launches();
            launched.push((index, gate));
        }
    }

    /// The queues `which` selects were synchronised: their launches ended.
    fn release_launched(&self, which: impl Fn(usize) -> bool) {
        self.launched.borrow_mut().retain(|&(index, gate)| {
            let ended = which(index);
            if ended {
                gate.release_queued();
            }
            !ended
        });
    }

    fn with_queue<R>(
        &self,
        index: usize,
        f: impl FnOnce(&mut AsyncInfo) -> Result<R>,
    ) -> Result<R> {
        let mut queues = self.queues.borrow_mut();
        f(slot_info(&mut queues[index].1))
    }
}

fn slot_info(slot: &mut Slot) -> &mut AsyncInfo {
    match slot {
        Slot::Own(info) => info,
        // SAFETY: the attached queue is borrowed exclusively for the
        // scope (`attach`), and its box lives as long as the queue.
        Slot::Attached(info) => unsafe { &mut **info },
    }
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("queues", &self.queues.borrow().len())
            .finish()
    }
}

/// A device buffer (or a writable view) lent to a [`Scope`] with
/// [`Scope::bind`]: what queued copies write into and queued kernels write
/// through, as often as needed. It stays exclusively borrowed until the
/// scope has waited for every queue.
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

impl<'scope, T: DeviceCopy> ScopedBuffer<'scope, T> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its values in `range`, still lent to the scope.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<ScopedBuffer<'scope, T>> {
        let (start, end) = resolve(range, self.len)?;
        Ok(ScopedBuffer {
            device: self.device,
            ptr: element::<T>(self.ptr, start),
            len: end - start,
            _lent: PhantomData,
        })
    }
}

impl<T: DeviceCopy> std::fmt::Debug for ScopedBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedBuffer")
            .field("device", &self.device.id())
            .field("len", &self.len)
            .finish()
    }
}

/// What queued work may read: a `&DeviceBuffer` or a [`DeviceSlice`]
/// (shared: nobody can write it meanwhile), or a [`ScopedBuffer`].
pub trait QueueSource<'scope, T: DeviceCopy>: Copy + sealed::Sealed {
    /// (device, address, length)
    #[doc(hidden)]
    fn parts(self) -> (&'scope Device, DevicePtr, usize);
}

/// What queued work may write: a [`ScopedBuffer`], or, for one operation,
/// a `&mut DeviceBuffer` or a [`DeviceSliceMut`] (borrowed for the rest of
/// the scope; [`Scope::bind`] lends one for several).
pub trait QueueDest<'scope, T: DeviceCopy>: sealed::Sealed {
    /// (device, address, length)
    #[doc(hidden)]
    fn dest_parts(self) -> (&'scope Device, DevicePtr, usize);
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
impl<T: DeviceCopy> sealed::Sealed for DeviceSlice<'_, T> {}
impl<'scope, T: DeviceCopy> QueueSource<'scope, T> for DeviceSlice<'scope, T> {
    fn parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device, self.ptr, self.len)
    }
}
impl<T: DeviceCopy> sealed::Sealed for ScopedBuffer<'_, T> {}
impl<'scope, T: DeviceCopy> QueueSource<'scope, T> for ScopedBuffer<'scope, T> {
    fn parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device, self.ptr, self.len)
    }
}
impl<'scope, T: DeviceCopy> QueueDest<'scope, T> for ScopedBuffer<'scope, T> {
    fn dest_parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device, self.ptr, self.len)
    }
}
impl<T: DeviceCopy> sealed::Sealed for &mut DeviceBuffer<'_, T> {}
impl<'scope, T: DeviceCopy> QueueDest<'scope, T> for &'scope mut DeviceBuffer<'_, T> {
    fn dest_parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device(), self.device_ptr(), self.len())
    }
}
impl<T: DeviceCopy> sealed::Sealed for DeviceSliceMut<'_, T> {}
impl<'scope, T: DeviceCopy> QueueDest<'scope, T> for DeviceSliceMut<'scope, T> {
    fn dest_parts(self) -> (&'scope Device, DevicePtr, usize) {
        (self.device, self.ptr, self.len)
    }
}

/// Queued kernel arguments: a lent buffer for any buffer parameter; a
/// `&mut DeviceBuffer` or writable view for a writing one; a shared view
/// for a reading one (`&DeviceBuffer` is in `params`).
macro_rules! queued_args {
    ($($param:ident: writes $writes:expr, slice $slice:expr => $($arg:ty),*;)*) => { $( $(
        impl<T: DeviceCopy> QueuedKernelArg<$param<T>> for $arg {
            fn queued_slot(&self) -> ArgSlot {
                ArgSlot::buffer::<T>(self.device, self.ptr.addr(), self.len, $writes, $slice)
            }
        }
    )* )* };
}
queued_args! {
    Ptr: writes false, slice false => ScopedBuffer<'_, T>, DeviceSlice<'_, T>;
    Slice: writes false, slice true => ScopedBuffer<'_, T>, DeviceSlice<'_, T>;
    PtrMut: writes true, slice false => ScopedBuffer<'_, T>, DeviceSliceMut<'_, T>;
    SliceMut: writes true, slice true => ScopedBuffer<'_, T>, DeviceSliceMut<'_, T>;
}
impl<T: DeviceCopy> QueuedKernelArg<PtrMut<T>> for &mut DeviceBuffer<'_, T> {
    fn queued_slot(&self) -> ArgSlot {
        ArgSlot::buffer::<T>(
            self.device(),
            self.device_ptr().addr(),
            self.len(),
            true,
            false,
        )
    }
}
impl<T: DeviceCopy> QueuedKernelArg<SliceMut<T>> for &mut DeviceBuffer<'_, T> {
    fn queued_slot(&self) -> ArgSlot {
        ArgSlot::buffer::<T>(
            self.device(),
            self.device_ptr().addr(),
            self.len(),
            true,
            true,
        )
    }
}

/// One queue of a [`scope`] on one device: its own, or a long-lived
/// [`crate::Queue`] attached. Its operations run in the order they were
/// queued and may still run after the call returned; an [`Event`] marks a
/// point another queue (or the host) can wait for.
///
/// Every copy names the device side first and the other side second, as
/// the blocking copies on buffers do (`buffer.copy_from_host(src)`):
/// `copy_from_host(dst, src)`, `copy_to_host(src, dst)`,
/// `copy_from(dst, src)`; a part of a buffer is a view or a
/// [`ScopedBuffer::slice`], never an offset argument.
///
/// The host plugin runs every queued operation at once (a valid queue: it
/// is in order); a GPU plugin runs them on its stream, one to one. Two
/// queues of one scope that touch a lent buffer without an event between
/// them race on device memory, as two CUDA streams do (the values are
/// then unspecified; host memory is never raced).
#[derive(Clone, Copy)]
pub struct ScopedQueue<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    index: usize,
    device: &'env Device,
}

impl<'scope, 'env> ScopedQueue<'scope, 'env> {
    /// The device the queue runs on.
    pub fn device(&self) -> &'env Device {
        self.device
    }

    fn check_device(&self, what: &str, device: &Device) -> Result<()> {
        super::checks::on_queue_device(what, device, self.device)
    }

    /// Queue a copy of `src` into `dst` (same length).
    pub fn copy_from_host<T: DeviceCopy>(
        &self,
        dst: impl QueueDest<'scope, T>,
        src: &'scope [T],
    ) -> Result<()> {
        let (device, ptr, len) = dst.dest_parts();
        self.check_device("the buffer", device)?;
        super::view::check_len(len, src.len())?;
        if std::mem::size_of_val(src) == 0 {
            return Ok(()); // an empty buffer has no address to copy to
        }
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: `src` is borrowed and `dst` lent exclusively for the
            // scope, which synchronises this queue before it ends; the
            // lengths match (checked).
            unsafe {
                self.device.submit_on(
                    queue,
                    ptr,
                    src.as_ptr().cast::<c_void>(),
                    std::mem::size_of_val(src),
                )
            }
        })
    }

    /// Queue a copy of `src` into `dst` (same length).
    pub fn copy_to_host<T: DeviceCopy>(
        &self,
        src: impl QueueSource<'scope, T>,
        dst: &'scope mut [T],
    ) -> Result<()> {
        let (device, ptr, len) = src.parts();
        self.check_device("the buffer", device)?;
        super::view::check_len(len, dst.len())?;
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
                    ptr,
                    std::mem::size_of_val(dst),
                )
            }
        })
    }

    /// Queue a copy of `src` (on this queue's device) into `dst` (same
    /// length, on any device of this runtime).
    pub fn copy_from<T: DeviceCopy>(
        &self,
        dst: impl QueueDest<'scope, T>,
        src: impl QueueSource<'scope, T>,
    ) -> Result<()> {
        let (src_device, src_ptr, src_len) = src.parts();
        let (dst_device, dst_ptr, dst_len) = dst.dest_parts();
        self.check_device("the source", src_device)?;
        super::checks::same_runtime("the destination", dst_device, self.device)?;
        super::view::check_len(dst_len, src_len)?;
        let bytes = src_len * std::mem::size_of::<T>();
        super::checks::disjoint(src_device, src_ptr, dst_device, dst_ptr, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: both buffers are borrowed (or lent) for the scope,
            // which synchronises this queue before it ends; they do not
            // overlap (checked).
            unsafe {
                self.device
                    .copy_to_device_on(queue, src_ptr, dst_device, dst_ptr, bytes)
            }
        })
    }

    /// Queue setting every value of `dst` to `value` (the staging values
    /// are kept until the scope ends).
    pub fn fill<T: DeviceCopy>(&self, dst: impl QueueDest<'scope, T>, value: T) -> Result<()> {
        let (device, ptr, len) = dst.dest_parts();
        self.check_device("the buffer", device)?;
        let bytes = len * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let values: Box<[T]> = vec![value; len].into_boxed_slice();
        let src = values.as_ptr().cast::<c_void>();
        // Kept until the final wait: the copy may still read it.
        self.scope.keep.borrow_mut().push(Box::new(values));
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: the staging values live until the scope ends (kept
            // above), `dst` is lent for the scope; `bytes` is its size.
            unsafe { self.device.submit_on(queue, ptr, src, bytes) }
        })
    }

    /// Queue a launch of `kernel` (on this queue's device) with `args`:
    /// buffers it reads as `&DeviceBuffer`, a view or a [`ScopedBuffer`];
    /// buffers it writes as a [`ScopedBuffer`], a `&mut DeviceBuffer` or a
    /// writable view. The signature is bounded, as for [`Kernel::launch`],
    /// and the same checks are made.
    ///
    /// Until this queue is synchronised ([`ScopedQueue::synchronize`], or
    /// the end of the scope), the globals of the kernel's image refuse the
    /// host's reads and writes ([`crate::Global`],
    /// [`Error::LaunchesPending`]): the launch may run at any time.
    pub fn launch<S: BoundedSignature, A: QueuedLaunchArgs<S> + 'scope>(
        &self,
        kernel: &Kernel<'env, S>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: a bounded signature (`Kernel::launch`'s reasoning).
        unsafe { self.launch_unchecked(kernel, config, args) }
    }

    /// [`ScopedQueue::launch`] for any signature, bare [`Ptr`] and
    /// [`PtrMut`] parameters included.
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
        // Pending from before it is queued until this queue is synchronised.
        self.scope.note_launch(self.index, kernel.gate);
        self.scope.with_queue(self.index, |queue| {
            // SAFETY: the kernel's signature is `S` (Image::kernel's
            // contract) and stays within its buffers (ours); its buffers
            // are borrowed for the scope ('scope bound on `A`), which
            // synchronises this queue before it ends; no host access to
            // its image's globals until then (the gate, noted above).
            unsafe {
                self.device.run_typed_on(
                    Some(queue),
                    kernel.addr as *mut c_void,
                    &mut values,
                    types.as_slice(),
                    region,
                )
            }
        })
    }

    /// Mark the current end of the queue: the event happens once
    /// everything queued so far has.
    pub fn record_event(&self) -> Result<Event<'env>> {
        self.scope
            .with_queue(self.index, |queue| Event::record(self.device, queue))
    }

    /// Make everything queued after this call wait for `event` (recorded
    /// on any queue).
    pub fn wait_for(&self, event: &Event<'_>) -> Result<()> {
        self.scope
            .with_queue(self.index, |queue| event.wait_on(self.device, queue))
    }

    /// Block until everything queued so far has completed; the globals of
    /// the images whose kernels it launched are then the host's again
    /// (unless another queue still holds launches of them).
    pub fn synchronize(&self) -> Result<()> {
        self.scope
            // SAFETY: the scope's own queue, which only this device's
            // plugin set.
            .with_queue(self.index, |queue| unsafe {
                self.device.synchronize_queue(queue)
            })?;
        self.scope.release_launched(|index| index == self.index);
        Ok(())
    }
}

impl std::fmt::Debug for ScopedQueue<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedQueue")
            .field("device", &self.device.id())
            .field("index", &self.index)
            .finish()
    }
}
