//! The shape of an `omp_target_memcpy_rect`: a value the export, its
//! `_async` task and the session pass down, so that its five arrays travel
//! as one.

use std::ffi::c_int;

/// The shape arguments of `omp_target_memcpy_rect`: the element size, the
/// number of dimensions and five arrays of that many elements.
pub(crate) struct Rect {
    pub(crate) element_size: usize,
    pub(crate) num_dims: c_int,
    pub(crate) volume: *const usize,
    pub(crate) dst_offsets: *const usize,
    pub(crate) src_offsets: *const usize,
    pub(crate) dst_dimensions: *const usize,
    pub(crate) src_dimensions: *const usize,
}

impl Rect {
    /// The five arrays, in the order of the API's parameters.
    pub(crate) fn arrays(&self) -> [*const usize; 5] {
        [
            self.volume,
            self.dst_offsets,
            self.src_offsets,
            self.dst_dimensions,
            self.src_dimensions,
        ]
    }

    /// The arrays copied one after another, for a copy made later (the
    /// `_async` form's task); `None` where they cannot be read (no
    /// dimension, or a null array), which the copy itself reports.
    ///
    /// # Safety
    /// Each non-null array holds `num_dims` elements.
    pub(crate) unsafe fn to_shape(&self) -> Option<Box<[usize]>> {
        let dims = usize::try_from(self.num_dims).ok().filter(|&d| d > 0)?;
        let arrays = self.arrays();
        if arrays.iter().any(|a| a.is_null()) {
            return None;
        }
        let mut shape = Vec::with_capacity(arrays.len() * dims);
        for a in arrays {
            // SAFETY: non-null, `num_dims` elements (our contract).
            shape.extend_from_slice(unsafe { std::slice::from_raw_parts(a, dims) });
        }
        Some(shape.into_boxed_slice())
    }

    /// The shape [`Rect::to_shape`] copied, read in place: valid while
    /// `shape` lives.
    pub(crate) fn from_shape(element_size: usize, num_dims: c_int, shape: &[usize]) -> Rect {
        let n = shape.len() / 5;
        let part = |i: usize| shape[i * n..].as_ptr();
        Rect {
            element_size,
            num_dims,
            volume: part(0),
            dst_offsets: part(1),
            src_offsets: part(2),
            dst_dimensions: part(3),
            src_dimensions: part(4),
        }
    }
}
