//! `DeviceBuffer`: a typed allocation on one device, and its blocking
//! copies (whole, sub-range, device to device) and fill.
use crate::abi::{AllocKind, AsyncInfo};
use crate::{Device, DevicePtr, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::Range;

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

/// Largest host staging buffer [`DeviceBuffer::fill`] uses, in bytes.
const FILL_CHUNK_BYTES: usize = 1 << 20;

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
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a buffer of {len} values of {} bytes is larger than the address space",
                std::mem::size_of::<T>()
            ))
        })?;
        if bytes == 0 {
            return Ok(DeviceBuffer {
                device,
                ptr: DevicePtr::from_raw(std::ptr::null_mut()),
                len,
                _values: PhantomData,
            });
        }
        // SAFETY: no host pointer is given; the new allocation is owned by
        // the buffer alone.
        let ptr = unsafe { device.alloc(bytes, std::ptr::null_mut(), AllocKind::Default) }?;
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
    /// [`DevicePtr`]).
    pub fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// The device holding the buffer.
    pub fn device(&self) -> &'rt Device {
        self.device
    }

    /// Overwrite the whole buffer with `values` (same length).
    pub fn copy_from_host(&mut self, values: &[T]) -> Result<()> {
        self.check_len(values.len())?;
        self.copy_from_host_at(0, values)
    }

    /// Overwrite `values.len()` values starting at value `offset`.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// # let runtime = Runtime::new(Config::default())?;
    /// let mut buffer = DeviceBuffer::from_slice(runtime.device(0)?, &[0u8; 6])?;
    /// buffer.copy_from_host_at(2, &[1, 2])?;
    /// assert_eq!(buffer.to_vec()?, [0, 0, 1, 2, 0, 0]);
    /// assert!(buffer.copy_from_host_at(5, &[1, 2]).is_err()); // past the end
    /// # drop(buffer); runtime.shutdown();
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn copy_from_host_at(&mut self, offset: usize, values: &[T]) -> Result<()> {
        let range = self.range(offset, values.len())?;
        if std::mem::size_of_val(values) == 0 {
            return Ok(());
        }
        // SAFETY: `values` is readable for its bytes; `range` lies within
        // this buffer (checked), which `&mut self` keeps live and unaliased.
        unsafe {
            self.device.submit(
                self.byte_ptr(range.start),
                values.as_ptr().cast::<c_void>(),
                std::mem::size_of_val(values),
            )
        }
    }

    /// Copy the whole buffer into `values` (same length).
    pub fn copy_to_host(&self, values: &mut [T]) -> Result<()> {
        self.check_len(values.len())?;
        self.copy_to_host_at(0, values)
    }

    /// Copy `values.len()` values starting at value `offset` into `values`.
    pub fn copy_to_host_at(&self, offset: usize, values: &mut [T]) -> Result<()> {
        let range = self.range(offset, values.len())?;
        if std::mem::size_of_val(values) == 0 {
            return Ok(());
        }
        // SAFETY: `values` is writable for its bytes and any bytes are a
        // valid `T` (DeviceCopy); `range` lies within this live buffer.
        unsafe {
            self.device.retrieve(
                values.as_mut_ptr().cast::<c_void>(),
                self.byte_ptr(range.start),
                std::mem::size_of_val(values),
            )
        }
    }

    /// The buffer's content as a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut values = Vec::<T>::with_capacity(self.len);
        if self.size_bytes() == 0 {
            // SAFETY: zero bytes to write: a zero-sized `T` or no values.
            unsafe { values.set_len(self.len) };
            return Ok(values);
        }
        // SAFETY: the plugin writes all size_bytes bytes before set_len; any
        // bytes are a valid `T`.
        unsafe {
            self.device.retrieve(
                values.as_mut_ptr().cast::<c_void>(),
                self.ptr,
                self.size_bytes(),
            )?;
            values.set_len(self.len);
        }
        Ok(values)
    }

    /// Overwrite the whole buffer with the content of `src` (same length),
    /// on the same device or another: straight when the plugin can copy
    /// between the two devices, else through host memory.
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
        self.check_len(src.len)?;
        self.copy_from_at(0, src, 0..src.len)
    }

    /// Overwrite values from `offset` on with `src`'s values in `range`.
    pub fn copy_from_at(
        &mut self,
        offset: usize,
        src: &DeviceBuffer<'_, T>,
        range: Range<usize>,
    ) -> Result<()> {
        if range.start > range.end {
            return Err(Error::InvalidArgument(format!(
                "the source range {}..{} is reversed",
                range.start, range.end
            )));
        }
        super::checks::same_runtime("the source", src.device, self.device)?;
        let src_range = src.range(range.start, range.len())?;
        let dst_range = self.range(offset, range.len())?;
        let bytes = range.len() * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let mut queue = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        // SAFETY: both ranges lie within live buffers (checked); `&mut
        // self` and `&src` are distinct buffers (the borrow checker), and
        // the queue is synchronised before they are released.
        let copied = unsafe {
            src.device.copy_to_device_on(
                &mut queue,
                src.byte_ptr(src_range.start),
                self.device,
                self.byte_ptr(dst_range.start),
                bytes,
            )
        };
        let synced = src.device.synchronize_queue(&mut queue);
        copied.and(synced)
    }

    /// Set every value to `value`.
    pub fn fill(&mut self, value: T) -> Result<()> {
        if self.size_bytes() == 0 {
            return Ok(());
        }
        let chunk_len = (FILL_CHUNK_BYTES / std::mem::size_of::<T>().max(1)).clamp(1, self.len);
        let chunk = vec![value; chunk_len];
        let mut offset = 0;
        while offset < self.len {
            let n = chunk_len.min(self.len - offset);
            self.copy_from_host_at(offset, &chunk[..n])?;
            offset += n;
        }
        Ok(())
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

    /// Values `offset..offset + len`, if they lie within the buffer.
    pub(crate) fn range(&self, offset: usize, len: usize) -> Result<Range<usize>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(offset..end),
            _ => Err(Error::InvalidArgument(format!(
                "values {offset}..{offset}+{len} are not within the buffer of {} values",
                self.len
            ))),
        }
    }

    /// The device address of value `index`.
    pub(crate) fn byte_ptr(&self, index: usize) -> DevicePtr {
        DevicePtr::from_raw(
            self.ptr
                .as_ptr()
                .wrapping_byte_add(index * std::mem::size_of::<T>()),
        )
    }

    pub(crate) fn check_len(&self, other_len: usize) -> Result<()> {
        if other_len == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                device_len: self.len,
                host_len: other_len,
            })
        }
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
