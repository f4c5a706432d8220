//! `DeviceBuffer`: a typed allocation on one device.
use crate::{abi::AllocKind, Device, DevicePtr, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

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

/// `len` values of `T` in one device's memory. Freed on drop (or with
/// [`DeviceBuffer::free`], which reports failures).
pub struct DeviceBuffer<'rt, T: DeviceCopy> {
    device: &'rt Device,
    ptr: DevicePtr,
    len: usize,
    _values: PhantomData<T>,
}

impl<'rt, T: DeviceCopy> DeviceBuffer<'rt, T> {
    /// Allocate room for `len` (> 0) values; the content is unspecified.
    pub fn new(device: &'rt Device, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "a buffer of {len} values of {} bytes",
                    std::mem::size_of::<T>()
                ))
            })?;
        let ptr = device.alloc(bytes, std::ptr::null_mut(), AllocKind::Default)?;
        Ok(DeviceBuffer {
            device,
            ptr,
            len,
            _values: PhantomData,
        })
    }

    /// Allocate and fill with a copy of `values`.
    pub fn from_slice(device: &'rt Device, values: &[T]) -> Result<Self> {
        let mut buffer = Self::new(device, values.len())?;
        buffer.copy_from_host(values)?;
        Ok(buffer)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: buffers hold at least one value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device address.
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
        // SAFETY: `values` is readable for size_bytes; the buffer is live
        // device memory of that size.
        unsafe {
            self.device.submit(
                self.ptr,
                values.as_ptr().cast::<c_void>(),
                self.size_bytes(),
            )
        }
    }

    /// Copy the whole buffer into `values` (same length).
    pub fn copy_to_host(&self, values: &mut [T]) -> Result<()> {
        self.check_len(values.len())?;
        // SAFETY: `values` is writable for size_bytes and any bytes are a
        // valid `T` (DeviceCopy); the buffer is live device memory.
        unsafe {
            self.device.retrieve(
                values.as_mut_ptr().cast::<c_void>(),
                self.ptr,
                self.size_bytes(),
            )
        }
    }

    /// The buffer's content as a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut values = Vec::<T>::with_capacity(self.len);
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

    /// Free the buffer now, reporting a failure (drop only logs it).
    pub fn free(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        this.device.free(this.ptr)
    }

    fn check_len(&self, host_len: usize) -> Result<()> {
        if host_len == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                device_len: self.len,
                host_len,
            })
        }
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if let Err(err) = self.device.free(self.ptr) {
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
            .field("ptr", &self.ptr.0)
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}
