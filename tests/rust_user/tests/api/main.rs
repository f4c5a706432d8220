//! The Rust API as a user meets it: `omptarget` by path with its default
//! features, `Runtime::new(Config::default())`, no staged file, no
//! variable. Every rule of the API is a test here; the lifetime and
//! aliasing rules are `compile_fail` doctests in the crate itself.
//!
//! One test binary, a module per topic.
#![allow(unused_imports)] // each topic uses part of the shared imports

mod buffers;
mod globals;
mod launch;
mod queues;
mod runtime;

use omptarget::{
    Config, DeviceBuffer, DeviceKind, Error, Image, Kernel, LaunchConfig, PinnedBuffer, Queue,
    Returned, Runtime, SkipReason, Slice, SliceMut,
};
use omptarget_user_tests::{kernel, openmp_kernel};

/// `void vec_add_slices(const float *a, size_t na, const float *b,
/// size_t nb, float *c, size_t nc)`: below all three lengths.
pub(crate) type VecAdd = (Slice<f32>, Slice<f32>, SliceMut<f32>);
/// `void scale(float a, const float *x, size_t nx, float *y, size_t ny)`:
/// below both lengths.
pub(crate) type Scale = (f32, Slice<f32>, SliceMut<f32>);

pub(crate) fn runtime() -> Runtime {
    Runtime::new(Config::default()).expect("the default runtime has the built-in host devices")
}
