//! The typed Rust API over a [`crate::Runtime`]: device buffers, pinned
//! host buffers, images, typed kernels and globals, and queues with events. Every handle borrows
//! the runtime, so none can outlive [`crate::Runtime::shutdown`]; see the
//! crate's front page for a walk-through.
mod buffer;
mod checks;
mod gate;
mod image;
mod kernel;
mod params;
mod pinned;
mod queue;
mod scope;
mod transfer;
mod view;

pub use buffer::{DeviceBuffer, DeviceCopy};
pub use image::{Global, Image};
pub use kernel::{Kernel, LaunchConfig};
pub use params::{
    BoundedParam, BoundedSignature, KernelArg, KernelParam, KernelSignature, LaunchArgs, Ptr,
    PtrMut, QueuedKernelArg, QueuedLaunchArgs, Slice, SliceMut,
};
pub use pinned::PinnedBuffer;
pub use queue::{Event, Queue};
pub use scope::{scope, QueueDest, QueueSource, Scope, ScopedBuffer, ScopedQueue};
pub use transfer::{HostBuffer, Returned, Transfer};
pub use view::{DeviceSlice, DeviceSliceMut};
