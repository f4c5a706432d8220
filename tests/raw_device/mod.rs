//! Raw device blocks for the tests of the raw device layer (its
//! bookkeeping, the memory manager, the teardown's leak report): included by
//! `runtime_memory`, `runtime_plugins` and `runtime_teardown`, which use all
//! of it. (Helpers over no type of ours are in `omptarget-test-support`.)

/// A raw block on `device`, for the tests of the raw device layer (its
/// bookkeeping, the memory manager, the teardown's leak report).
pub fn alloc(
    device: &omptarget::Device,
    size: usize,
    host_ptr: *mut std::ffi::c_void,
    kind: omptarget::abi::AllocKind,
) -> omptarget::Result<omptarget::DevicePtr> {
    // SAFETY: the tests pass no host pointer (null) or one they own; the
    // block belongs to the test alone.
    unsafe { device.alloc(size, host_ptr, kind) }
}

/// Free a raw block: the tests own every block they free (never one of a
/// `DeviceBuffer`), and the raw layer refuses unknown or freed addresses
/// without touching memory, which is what several tests check.
pub fn free(device: &omptarget::Device, ptr: omptarget::DevicePtr) -> omptarget::Result<()> {
    // SAFETY: see above.
    unsafe { device.free(ptr) }
}
