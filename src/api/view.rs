//! Views of a buffer's values: [`DeviceSlice`] (shared, `Copy`) and
//! [`DeviceSliceMut`] (exclusive), with the borrow rules of `&[T]` and
//! `&mut [T]`. They take part in copies and launches wherever a whole
//! buffer does, so an offset is a view, not an extra argument.
use super::queue::synchronize_or_abort;
use super::DeviceCopy;
use crate::abi::AsyncInfo;
use crate::{Device, DevicePtr, Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// Largest host staging buffer a fill uses, in bytes.
const FILL_CHUNK_BYTES: usize = 1 << 20;

/// Values of a [`crate::DeviceBuffer`] borrowed for reading:
/// `buffer.slice(2..6)?`, or the whole buffer (`buffer.as_slice()`).
pub struct DeviceSlice<'a, T: DeviceCopy> {
    pub(crate) device: &'a Device,
    pub(crate) ptr: DevicePtr,
    pub(crate) len: usize,
    _values: PhantomData<&'a [T]>,
}

/// Values of a [`crate::DeviceBuffer`] borrowed for writing:
/// `buffer.slice_mut(2..6)?`, `buffer.split_at_mut(n)?`.
pub struct DeviceSliceMut<'a, T: DeviceCopy> {
    pub(crate) device: &'a Device,
    pub(crate) ptr: DevicePtr,
    pub(crate) len: usize,
    _values: PhantomData<&'a mut [T]>,
}

impl<T: DeviceCopy> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceSlice<'_, T> {}

/// `range` of `len` values, as `start..end`, or why not.
pub(crate) fn resolve(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::InvalidArgument(format!(
            "range {:?}..{:?} is not within the buffer of {len} values",
            range.start_bound(),
            range.end_bound()
        ))),
    }
}

/// The device address of value `index` of the values at `ptr`.
pub(crate) fn element<T>(ptr: DevicePtr, index: usize) -> DevicePtr {
    if index == 0 {
        return ptr;
    }
    DevicePtr::from_raw(
        ptr.as_ptr()
            .wrapping_byte_add(index * std::mem::size_of::<T>()),
    )
}

pub(crate) fn check_len(view_len: usize, other_len: usize) -> Result<()> {
    if view_len == other_len {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            device_len: view_len,
            host_len: other_len,
        })
    }
}

impl<'a, T: DeviceCopy> DeviceSlice<'a, T> {
    /// # Safety
    /// `len` values at `ptr` on `device` stay allocated and unwritten by
    /// anyone else for `'a`.
    pub(crate) unsafe fn new(device: &'a Device, ptr: DevicePtr, len: usize) -> Self {
        DeviceSlice {
            device,
            ptr,
            len,
            _values: PhantomData,
        }
    }

    /// The values in `range` of this view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, end) = resolve(range, self.len)?;
        // SAFETY: a sub-range of this view, borrowed as long.
        Ok(unsafe { DeviceSlice::new(self.device, element::<T>(self.ptr, start), end - start) })
    }

    /// Copy the values into `dst` (same length).
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        check_len(self.len, dst.len())?;
        if std::mem::size_of_val(dst) == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is writable for its bytes and any bytes are a
        // valid `T` (DeviceCopy); the view's values are live.
        unsafe {
            self.device.retrieve(
                dst.as_mut_ptr().cast::<c_void>(),
                self.ptr,
                std::mem::size_of_val(dst),
            )
        }
    }

    /// The values as a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut values = Vec::<T>::with_capacity(self.len);
        let bytes = self.len * std::mem::size_of::<T>();
        if bytes > 0 {
            // SAFETY: the plugin writes all `bytes` before `set_len`.
            unsafe {
                self.device
                    .retrieve(values.as_mut_ptr().cast::<c_void>(), self.ptr, bytes)?
            };
        }
        // SAFETY: every byte written (or none needed); any bytes are a `T`.
        unsafe { values.set_len(self.len) };
        Ok(values)
    }
}

impl<'a, T: DeviceCopy> DeviceSliceMut<'a, T> {
    /// # Safety
    /// `len` values at `ptr` on `device` stay allocated, and nobody else
    /// reads or writes them, for `'a`.
    pub(crate) unsafe fn new(device: &'a Device, ptr: DevicePtr, len: usize) -> Self {
        DeviceSliceMut {
            device,
            ptr,
            len,
            _values: PhantomData,
        }
    }

    /// A shared view of the same values, for as long as this one is not
    /// used to write.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: borrowed from `self`: nobody writes meanwhile.
        unsafe { DeviceSlice::new(self.device, self.ptr, self.len) }
    }

    /// A shorter-lived exclusive view of the same values (to pass this one
    /// to a launch and keep using it afterwards).
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: borrowed exclusively from `self`.
        unsafe { DeviceSliceMut::new(self.device, self.ptr, self.len) }
    }

    /// The values in `range` of this view, exclusively.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (start, end) = resolve(range, self.len)?;
        // SAFETY: a sub-range of this view, borrowed exclusively from it.
        Ok(unsafe { DeviceSliceMut::new(self.device, element::<T>(self.ptr, start), end - start) })
    }

    /// Split into values `..mid` and `mid..`, both writable, as
    /// `<[T]>::split_at_mut`.
    pub fn split_at_mut(
        self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>)> {
        if mid > self.len {
            return Err(Error::InvalidArgument(format!(
                "split at {mid} of a view of {} values",
                self.len
            )));
        }
        // SAFETY: two disjoint parts of this exclusive view, which is
        // consumed.
        Ok(unsafe {
            (
                DeviceSliceMut::new(self.device, self.ptr, mid),
                DeviceSliceMut::new(self.device, element::<T>(self.ptr, mid), self.len - mid),
            )
        })
    }

    /// Overwrite the values with `src` (same length).
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        check_len(self.len, src.len())?;
        if std::mem::size_of_val(src) == 0 {
            return Ok(());
        }
        // SAFETY: `src` is readable for its bytes; the view's values are
        // live and exclusively ours.
        unsafe {
            self.device.submit(
                self.ptr,
                src.as_ptr().cast::<c_void>(),
                std::mem::size_of_val(src),
            )
        }
    }

    /// Copy the values into `dst` (same length).
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice().copy_to_host(dst)
    }

    /// The values as a new vector.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_slice().to_vec()
    }

    /// Overwrite the values with `src`'s (same length), on the same device
    /// or another of the same runtime: straight when the plugin can copy
    /// between the two devices, else through host memory.
    pub fn copy_from(&mut self, src: DeviceSlice<'_, T>) -> Result<()> {
        super::checks::same_runtime("the source", src.device, self.device)?;
        check_len(self.len, src.len)?;
        let bytes = self.len * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let mut queue = AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        // SAFETY: both views are live; `&mut self` and a shared `src` cannot
        // overlap (the borrow checker); the queue is synchronised before
        // they are released (or the process ends, below).
        let copied = unsafe {
            src.device
                .copy_to_device_on(&mut queue, src.ptr, self.device, self.ptr, bytes)
        };
        // Also when the copy failed: part of it may have been queued. A
        // failed synchronisation would return and end both borrows while
        // the copy may still read `src` and write `self` (memory the caller
        // may free or reuse at once; on the host plugin, host memory): it
        // aborts instead, the policy of every queue the API waits for.
        synchronize_or_abort(src.device, &mut queue, &"after a device-to-device copy")?;
        copied
    }

    /// Set every value to `value`.
    pub fn fill(&mut self, value: T) -> Result<()> {
        if self.len * std::mem::size_of::<T>() == 0 {
            return Ok(());
        }
        let chunk_len = (FILL_CHUNK_BYTES / std::mem::size_of::<T>()).clamp(1, self.len);
        let chunk = vec![value; chunk_len];
        let mut offset = 0;
        while offset < self.len {
            let n = chunk_len.min(self.len - offset);
            self.slice_mut(offset..offset + n)?
                .copy_from_host(&chunk[..n])?;
            offset += n;
        }
        Ok(())
    }
}

/// What both views have alike: their accessors and `Debug`.
macro_rules! view_basics {
    ($($view:ident),*) => { $(
        impl<'a, T: DeviceCopy> $view<'a, T> {
            /// Number of values.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether it holds no value.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The device holding the values.
            pub fn device(&self) -> &'a Device {
                self.device
            }

            /// The address of its first value (null for an empty buffer).
            pub fn device_ptr(&self) -> DevicePtr {
                self.ptr
            }
        }

        impl<T: DeviceCopy> std::fmt::Debug for $view<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($view))
                    .field("device", &self.device.id())
                    .field("ptr", &self.ptr.as_ptr())
                    .field("len", &self.len)
                    .finish()
            }
        }
    )* };
}
view_basics!(DeviceSlice, DeviceSliceMut);

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn ranges_resolve_like_slice_indexing() {
        assert_eq!(resolve(.., 4).unwrap(), (0, 4));
        assert_eq!(resolve(1..3, 4).unwrap(), (1, 3));
        assert_eq!(resolve(1..=3, 4).unwrap(), (1, 4));
        assert_eq!(resolve(4.., 4).unwrap(), (4, 4));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 3..2;
        assert!(resolve(reversed, 4).is_err());
        assert!(resolve(0..5, 4).is_err());
        assert!(resolve(..=usize::MAX, 4).is_err());
    }
}
