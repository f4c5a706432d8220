//! The info queries' answer (`olGet*Info` and `olGet*InfoSize`): a value
//! written into the caller's buffer, its size into `PropSizeRet`, as
//! LLVM's `InfoWriter` does.

use super::errors::{ol_error, Errc, Outcome};
use std::ffi::c_void;

/// Where an info query's answer goes.
pub(crate) struct InfoOut {
    /// Bytes at `value` (`PropSize`).
    size: usize,
    /// The caller's buffer, or null for a size query.
    value: *mut c_void,
    /// Where the answer's size goes, or null.
    size_ret: *mut usize,
}

impl InfoOut {
    /// `olGet*Info`'s buffer of `size` bytes.
    pub(crate) fn value(size: usize, value: *mut c_void) -> InfoOut {
        InfoOut {
            size,
            value,
            size_ret: std::ptr::null_mut(),
        }
    }

    /// `olGet*InfoSize`'s `PropSizeRet`.
    pub(crate) fn size(size_ret: *mut usize) -> InfoOut {
        InfoOut {
            size: 0,
            value: std::ptr::null_mut(),
            size_ret,
        }
    }

    /// Write the bytes of an answer.
    ///
    /// # Safety
    /// `value` is null or writable for `size` bytes and `size_ret` is null
    /// or writable (the entry's contract with its caller).
    unsafe fn bytes(&self, bytes: &[u8]) -> Outcome {
        if self.value.is_null() && self.size_ret.is_null() {
            return Err(ol_error!(
                Errc::InvalidNullPointer,
                "neither PropValue nor PropSizeRet was given"
            ));
        }
        if !self.value.is_null() {
            if self.size < bytes.len() {
                return Err(ol_error!(
                    Errc::InvalidSize,
                    "PropSize is smaller than the property's value"
                ));
            }
            // SAFETY: `value` holds `size` >= `bytes.len()` bytes (our
            // contract), and is the caller's, not `bytes`.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.value.cast(), bytes.len())
            };
        }
        if !self.size_ret.is_null() {
            // SAFETY: writable (our contract).
            unsafe { self.size_ret.write(bytes.len()) };
        }
        Ok(())
    }

    /// Write a plain value (an integer, an enum, a handle).
    ///
    /// # Safety
    /// As [`InfoOut::bytes`].
    pub(crate) unsafe fn write<T: Copy>(&self, value: T) -> Outcome {
        // SAFETY: a `Copy` value of `size_of::<T>()` initialised bytes (the
        // types written here have no padding: integers, enums, pointers
        // and `ol_dimensions_t`'s three `u32`).
        let bytes =
            unsafe { std::slice::from_raw_parts((&raw const value).cast::<u8>(), size_of::<T>()) };
        // SAFETY: our contract.
        unsafe { self.bytes(bytes) }
    }

    /// Write a string, NUL-terminated.
    ///
    /// # Safety
    /// As [`InfoOut::bytes`].
    pub(crate) unsafe fn string(&self, text: &str) -> Outcome {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(0);
        // SAFETY: our contract.
        unsafe { self.bytes(&bytes) }
    }
}
