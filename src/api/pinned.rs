//! `PinnedBuffer`: page-locked host memory from a device's plugin, read and
//! written from the host as a slice.
use super::DeviceCopy;
use crate::abi::AllocKind;
use crate::{Device, DevicePtr, Error, Result};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

/// `len` values of `T` in host memory that `device`'s plugin allocated as
/// its host kind (`AllocKind::Host`, LLVM's `TARGET_ALLOC_HOST`, what
/// `omp_target_alloc_host` asks for): memory the host reads and writes and
/// the device copies from and to directly. It is a slice on the host
/// (`Deref<Target = [T]>`, `DerefMut`), so it is the host side of any copy:
/// [`crate::DeviceBuffer::copy_from_host`], `copy_to_host` and, inside
/// [`crate::scope`], a [`crate::Queue`]'s copies.
///
/// What "pinned" means depends on the plugin:
///
/// * CUDA plugin: `cuMemAllocHost`, page-locked memory the GPU reaches by
///   DMA. Copies from and to it need no staging, and a queued copy runs
///   asynchronously with the host and other streams (from pageable memory
///   the driver stages it, and the host waits). Page-locked memory is
///   taken from the system's RAM for good: allocate it for buffers that
///   are reused, not per copy.
/// * host plugin: ordinary `malloc`ed memory (its devices are the host, so
///   there is nothing to pin); the API is the same, so code runs on either.
/// * another plugin: whatever its `data_alloc` gives for the host kind,
///   which by the ABI is host memory the device can access.
///
/// It owns the memory like a [`crate::DeviceBuffer`]: freed through the
/// plugin on drop (or with [`PinnedBuffer::free`], which reports failures),
/// borrowing the runtime so that it cannot outlive the shutdown, and a
/// buffer never freed (`mem::forget`) is freed by the shutdown and listed
/// among the program's leaks ([`crate::ShutdownReport::user_leaks`], with
/// kind `AllocKind::Host`).
///
/// ```
/// # use omptarget::{Config, DeviceBuffer, PinnedBuffer, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// let device = runtime.device(0)?;
/// let mut staging = PinnedBuffer::<f32>::new(device, 4)?; // zeroed
/// staging.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
/// let mut buffer = DeviceBuffer::<f32>::new(device, 4)?;
/// buffer.copy_from_host(&staging)?;
/// staging.fill(0.0);
/// buffer.copy_to_host(&mut staging)?;
/// assert_eq!(staging[..], [1.0, 2.0, 3.0, 4.0]);
/// # drop((staging, buffer)); runtime.shutdown();
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// ```compile_fail,E0505
/// # use omptarget::{Config, PinnedBuffer, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// let pinned = PinnedBuffer::<u8>::new(runtime.device(0)?, 16)?;
/// let report = runtime.shutdown(); // error: `runtime` is still borrowed
/// drop(pinned);
/// # Ok::<(), omptarget::Error>(())
/// ```
pub struct PinnedBuffer<'rt, T: DeviceCopy> {
    device: &'rt Device,
    /// The allocation (null when nothing was allocated: no bytes).
    ptr: DevicePtr,
    len: usize,
    _values: PhantomData<T>,
}

impl<'rt, T: DeviceCopy> PinnedBuffer<'rt, T> {
    /// Allocate `len` values through `device`'s plugin, set to zero. An
    /// empty buffer (`len` 0, or a zero-sized `T`) allocates nothing.
    ///
    /// # Errors
    /// The plugin's failure ([`Error::OutOfMemory`] when it returns null,
    /// as LLVM 14's host plugin does for kinds it lacks), a size beyond the
    /// address space, or memory not aligned for `T`
    /// ([`Error::InvalidArgument`]; it is freed again).
    #[track_caller]
    pub fn new(device: &'rt Device, len: usize) -> Result<Self> {
        let ptr =
            super::buffer::alloc_values::<T>(device, len, AllocKind::Host, "a pinned buffer")?;
        if ptr.as_ptr().is_null() {
            // Nothing allocated (no bytes): nothing to check or zero.
        } else if ptr.addr() % std::mem::align_of::<T>() != 0 {
            // SAFETY: allocated just above, used by nothing else.
            let _ = unsafe { device.free(ptr) };
            return Err(Error::InvalidArgument(format!(
                "device {} ({}) gave host memory at {:#x}, not aligned for {} (alignment {})",
                device.id(),
                device.plugin_name(),
                ptr.addr(),
                std::any::type_name::<T>(),
                std::mem::align_of::<T>()
            )));
        } else {
            // SAFETY: the host kind's memory is host memory (the ABI's
            // `TARGET_ALLOC_HOST`), `len` values long, owned by this buffer
            // alone; zeroing makes every value initialised (any bytes are a
            // `T`).
            unsafe { std::ptr::write_bytes(ptr.as_ptr().cast::<T>(), 0, len) };
        }
        Ok(PinnedBuffer {
            device,
            ptr,
            len,
            _values: PhantomData,
        })
    }

    /// Allocate and fill with a copy of `values`.
    #[track_caller]
    pub fn from_slice(device: &'rt Device, values: &[T]) -> Result<Self> {
        let mut buffer = Self::new(device, values.len())?;
        buffer.copy_from_slice(values);
        Ok(buffer)
    }

    /// The device whose plugin allocated it.
    pub fn device(&self) -> &'rt Device {
        self.device
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Free the buffer now, reporting a failure (drop only logs it).
    pub fn free(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.ptr.as_ptr().is_null() {
            return Ok(()); // nothing was allocated
        }
        // SAFETY: the buffer owns the allocation and is consumed here.
        unsafe { this.device.free(this.ptr) }
    }
}

impl<T: DeviceCopy> Deref for PinnedBuffer<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        if self.ptr.as_ptr().is_null() {
            // Nothing allocated: no values, or values of no size (then
            // `len` of them live anywhere aligned).
            // SAFETY: a dangling aligned pointer is valid for 0 bytes.
            return unsafe {
                std::slice::from_raw_parts(std::ptr::NonNull::<T>::dangling().as_ptr(), self.len)
            };
        }
        // SAFETY: `len` initialised values (zeroed or written since) of
        // host memory this buffer owns, aligned for `T` (checked at
        // allocation), alive until it is freed, which needs `self`; only
        // the host touches it (no kernel argument takes it), and shared
        // access follows `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for PinnedBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.ptr.as_ptr().is_null() {
            // SAFETY: as in `deref`: 0 bytes at a dangling aligned pointer.
            return unsafe {
                std::slice::from_raw_parts_mut(
                    std::ptr::NonNull::<T>::dangling().as_ptr(),
                    self.len,
                )
            };
        }
        // SAFETY: as for `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: DeviceCopy> Drop for PinnedBuffer<'_, T> {
    fn drop(&mut self) {
        if self.ptr.as_ptr().is_null() {
            return; // nothing was allocated
        }
        // SAFETY: the buffer owns the allocation; nothing uses it after drop.
        if let Err(err) = unsafe { self.device.free(self.ptr) } {
            tracing::warn!(
                device = self.device.id(),
                "freeing a dropped PinnedBuffer failed: {err}"
            );
        }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for PinnedBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("device", &self.device.id())
            .field("ptr", &self.ptr.as_ptr())
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}
