//! `DeviceBuffer`: a typed allocation on one device, its views, and its
//! blocking copies (whole; parts through views) and fill.
use super::view::{element, resolve, DeviceSlice, DeviceSliceMut};
use crate::abi::AllocKind;
use crate::{Device, DevicePtr, Error, Result};
use std::marker::PhantomData;
use std::ops::RangeBounds;

/// Plain data that may be copied to and from a device byte for byte.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes is a valid value (device
/// memory may hold anything a kernel wrote), and the type has no padding,
/// pointers to host memory, or drop glue.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: a primitive number: every bit pattern is valid.
        unsafe impl DeviceCopy for $t {}
    )* };
}
device_copy!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// A new allocation of `len` values of `T` on `device` as `kind`, for a
/// buffer that owns it alone (`what` names it in the message); null,
/// allocating nothing, when that is no bytes.
#[track_caller]
pub(crate) fn alloc_values<T>(
    device: &Device,
    len: usize,
    kind: AllocKind,
    what: &str,
) -> Result<DevicePtr> {
    let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{what} of {len} values of {} bytes is larger than the address space",
            std::mem::size_of::<T>()
        ))
    })?;
    if bytes == 0 {
        return Ok(DevicePtr::from_raw(std::ptr::null_mut()));
    }
    // SAFETY: no host pointer is given; the new allocation goes to the
    // caller's buffer alone.
    unsafe { device.alloc(bytes, std::ptr::null_mut(), kind) }
}

/// `len` values of `T` in one device's memory. It owns the memory: freed
/// on drop (or with [`DeviceBuffer::free`], which reports failures), and
/// nothing safe can free or alias it before then:
///
/// ```compile_fail,E0133
/// # use omptarget::{Config, DeviceBuffer, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// let mut buffer = DeviceBuffer::<f32>::new(device, 16)?;
/// device.free(buffer.device_ptr())?; // error: `free` is unsafe
/// # Ok::<(), omptarget::Error>(())
/// ```
///
/// A buffer borrows its runtime, so none outlives the shutdown:
///
/// ```compile_fail,E0505
/// # use omptarget::{Config, DeviceBuffer, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// let buffer = DeviceBuffer::<f32>::new(runtime.device(0)?, 16)?;
/// let report = runtime.shutdown(); // error: `runtime` is still borrowed
/// drop(buffer);
/// # Ok::<(), omptarget::Error>(())
/// ```
pub struct DeviceBuffer<'rt, T: DeviceCopy> {
    device: &'rt Device,
    ptr: DevicePtr,
    len: usize,
    _values: PhantomData<T>,
}

impl<'rt, T: DeviceCopy> DeviceBuffer<'rt, T> {
    /// Allocate room for `len` values; the content is unspecified. An
    /// empty buffer (`len` 0, or a zero-sized `T`) allocates nothing: its
    /// address is null, and every copy and launch takes it.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// let runtime = Runtime::new(Config::default())?;
    /// let mut buffer = DeviceBuffer::<u32>::new(runtime.device(0)?, 4)?;
    /// buffer.fill(7)?;
    /// assert_eq!(buffer.to_vec()?, [7, 7, 7, 7]);
    /// # drop(buffer); runtime.shutdown();
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    #[track_caller]
    pub fn new(device: &'rt Device, len: usize) -> Result<Self> {
        let ptr = alloc_values::<T>(device, len, AllocKind::Default, "a buffer")?;
        Ok(DeviceBuffer {
            device,
            ptr,
            len,
            _values: PhantomData,
        })
    }

    /// Allocate and fill with a copy of `values`.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// let runtime = Runtime::new(Config::default())?;
    /// let buffer = DeviceBuffer::from_slice(runtime.device(0)?, &[1.0f64, 2.0])?;
    /// assert_eq!(buffer.to_vec()?, [1.0, 2.0]);
    /// # drop(buffer); runtime.shutdown();
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    #[track_caller]
    pub fn from_slice(device: &'rt Device, values: &[T]) -> Result<Self> {
        let mut buffer = Self::new(device, values.len())?;
        buffer.copy_from_host(values)?;
        Ok(buffer)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address (using it as memory is `unsafe`; see
    /// [`DevicePtr`]); null for an empty buffer.
    pub fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// The device holding the buffer.
    pub fn device(&self) -> &'rt Device {
        self.device
    }

    /// All its values, borrowed for reading.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: the buffer's own values, borrowed shared from it.
        unsafe { DeviceSlice::new(self.device, self.ptr, self.len) }
    }

    /// All its values, borrowed for writing.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: the buffer's own values, borrowed exclusively from it.
        unsafe { DeviceSliceMut::new(self.device, self.ptr, self.len) }
    }

    /// The values in `range`, borrowed for reading: a view usable in
    /// copies and launches wherever the buffer is.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// # let runtime = Runtime::new(Config::default())?;
    /// let mut buffer = DeviceBuffer::from_slice(runtime.device(0)?, &[0u8; 6])?;
    /// buffer.slice_mut(2..4)?.copy_from_host(&[1, 2])?;
    /// assert_eq!(buffer.slice(1..5)?.to_vec()?, [0, 1, 2, 0]);
    /// assert!(buffer.slice(5..7).is_err()); // past the end
    /// # drop(buffer); runtime.shutdown();
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().slice(range)
    }

    /// The values in `range`, borrowed for writing.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (start, end) = resolve(range, self.len)?;
        // SAFETY: a sub-range of the buffer, borrowed exclusively from it.
        Ok(unsafe { DeviceSliceMut::new(self.device, element::<T>(self.ptr, start), end - start) })
    }

    /// Values `..mid` and `mid..`, both writable (two halves for two
    /// kernels, or a kernel's input and output).
    ///
    /// ```compile_fail,E0499
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// # let runtime = Runtime::new(Config::default())?;
    /// let mut buffer = DeviceBuffer::<u8>::new(runtime.device(0)?, 8)?;
    /// let (low, high) = buffer.split_at_mut(4)?;
    /// let again = buffer.slice_mut(..)?; // error: `buffer` is borrowed by the halves
    /// drop((low, high, again));
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'_, T>, DeviceSliceMut<'_, T>)> {
        self.as_mut_slice().split_at_mut(mid)
    }

    /// Overwrite the whole buffer with `src` (same length); for part of
    /// it, a view: `buffer.slice_mut(2..4)?.copy_from_host(src)`.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.as_mut_slice().copy_from_host(src)
    }

    /// Copy the whole buffer into `dst` (same length); for part of it, a
    /// view: `buffer.slice(2..4)?.copy_to_host(dst)`.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice().copy_to_host(dst)
    }

    /// The buffer's content as a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_slice().to_vec()
    }

    /// Overwrite the whole buffer with the content of `src` (same length),
    /// on the same device or another of this runtime: straight when the
    /// plugin can copy between the two devices, else through host memory.
    /// Views copy parts: `dst.slice_mut(..2)?.copy_from(src.slice(4..6)?)`.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// # let runtime = Runtime::new(Config::default())?;
    /// let src = DeviceBuffer::from_slice(runtime.device(0)?, &[1, 2, 3])?;
    /// let mut dst = DeviceBuffer::<i32>::new(runtime.device(1)?, 3)?;
    /// dst.copy_from(&src)?;
    /// assert_eq!(dst.to_vec()?, [1, 2, 3]);
    /// # drop((src, dst)); runtime.shutdown();
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn copy_from(&mut self, src: &DeviceBuffer<'_, T>) -> Result<()> {
        self.as_mut_slice().copy_from(src.as_slice())
    }

    /// Set every value to `value`.
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.as_mut_slice().fill(value)
    }

    /// Free the buffer now, reporting a failure (drop only logs it).
    pub fn free(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.size_bytes() == 0 {
            return Ok(()); // nothing was allocated
        }
        // SAFETY: the buffer owns the allocation and is consumed here.
        unsafe { this.device.free(this.ptr) }
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if self.size_bytes() == 0 {
            return; // nothing was allocated
        }
        // SAFETY: the buffer owns the allocation; nothing uses it after drop.
        if let Err(err) = unsafe { self.device.free(self.ptr) } {
            tracing::warn!(
                device = self.device.id(),
                "freeing a dropped DeviceBuffer failed: {err}"
            );
        }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("device", &self.device.id())
            .field("ptr", &self.ptr.as_ptr())
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}
