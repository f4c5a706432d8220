//! Decoding the raw argument arrays clang passes into borrowed slices.
//!
//! This is where the C ABI ends: past [`MapArgs::from_raw`] the runtime
//! sees slices with checked lengths, never raw arrays.

use std::ffi::c_void;
use std::fmt;

/// The map arguments of one `__tgt_target*` / `__tgt_target_data_*` call.
#[derive(Clone, Copy)]
pub(crate) struct MapArgs<'a> {
    pub base: &'a [*mut c_void],
    pub begin: &'a [*mut c_void],
    pub sizes: &'a [i64],
    pub types: &'a [i64],
    /// Source names of the mapped variables (`map_var_info_t`), if given.
    pub names: Option<&'a [*mut c_void]>,
    /// User-defined mapper functions (null where none), if given.
    pub mappers: Option<&'a [*mut c_void]>,
}

/// Why the raw arguments could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ArgError {
    NegativeCount(i32),
    NullArray(&'static str),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::NegativeCount(n) => write!(f, "negative argument count {n}"),
            ArgError::NullArray(which) => write!(f, "null {which} array with a non-zero argument count"),
        }
    }
}

/// Borrow `count` elements at `ptr`; a null `ptr` is allowed only for 0.
///
/// # Safety
/// A non-null `ptr` must point to `count` initialised elements that stay
/// valid and unmodified for `'a`.
unsafe fn slice<'a, T>(ptr: *const T, count: usize, what: &'static str) -> Result<&'a [T], ArgError> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(ArgError::NullArray(what));
    }
    Ok(std::slice::from_raw_parts(ptr, count))
}

impl<'a> MapArgs<'a> {
    /// Decode clang's parallel arrays.
    ///
    /// # Safety
    /// Each non-null array holds `arg_num` elements valid for `'a` (as clang
    /// guarantees for the duration of the call).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn from_raw(
        arg_num: i32,
        base: *mut *mut c_void,
        begin: *mut *mut c_void,
        sizes: *mut i64,
        types: *mut i64,
        names: *mut *mut c_void,
        mappers: *mut *mut c_void,
    ) -> Result<Self, ArgError> {
        let n = usize::try_from(arg_num).map_err(|_| ArgError::NegativeCount(arg_num))?;
        Ok(MapArgs {
            base: slice(base, n, "args_base")?,
            begin: slice(begin, n, "args")?,
            sizes: slice(sizes, n, "arg_sizes")?,
            types: slice(types, n, "arg_types")?,
            names: if names.is_null() { None } else { Some(slice(names, n, "arg_names")?) },
            mappers: if mappers.is_null() { None } else { Some(slice(mappers, n, "arg_mappers")?) },
        })
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_args_accept_null_arrays() {
        let args = unsafe {
            MapArgs::from_raw(0, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
        }
        .unwrap();
        assert_eq!(args.len(), 0);
        assert!(args.names.is_none());
    }

    #[test]
    fn null_array_with_arguments_is_an_error() {
        let mut sizes = [8i64];
        let r = unsafe {
            MapArgs::from_raw(1, std::ptr::null_mut(), std::ptr::null_mut(), sizes.as_mut_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
        };
        assert_eq!(r.err(), Some(ArgError::NullArray("args_base")));
    }

    #[test]
    fn negative_count_is_an_error() {
        let r = unsafe {
            MapArgs::from_raw(-3, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
        };
        assert_eq!(r.err(), Some(ArgError::NegativeCount(-3)));
    }
}
