//! The OpenMP device memory API (`omp_target_*`) and LLVM's extensions.
//! Each entry decodes its C arguments and hands them to the session; the
//! semantics (LLVM 14's return values and messages) live in the runtime's
//! offload layer.

use crate::boundary::guard;
use crate::copies::{memcpy_as, memcpy_rect_as};
use crate::export::export_c;
use crate::rect::Rect;
use crate::session::lifecycle::with_session;
use omptarget_abi::{AllocKind, OFFLOAD_FAIL};
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

extern "C-unwind" fn omp_get_num_devices() -> c_int {
    guard("omp_get_num_devices", 0, || {
        with_session(|s| s.num_devices())
    })
}

extern "C-unwind" fn omp_get_initial_device() -> c_int {
    // The host's device number is the number of devices (OpenMP 5.1).
    guard("omp_get_initial_device", 0, || {
        with_session(|s| s.initial_device())
    })
}

fn alloc(entry: &'static str, size: usize, device_num: c_int, kind: AllocKind) -> *mut c_void {
    guard(entry, null_mut(), || {
        with_session(|s| s.target_alloc(size, device_num, kind))
    })
}

extern "C-unwind" fn omp_target_alloc(size: usize, device_num: c_int) -> *mut c_void {
    alloc("omp_target_alloc", size, device_num, AllocKind::Default)
}

extern "C-unwind" fn llvm_omp_target_alloc_device(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_device",
        size,
        device_num,
        AllocKind::Device,
    )
}

extern "C-unwind" fn llvm_omp_target_alloc_host(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_host",
        size,
        device_num,
        AllocKind::Host,
    )
}

extern "C-unwind" fn llvm_omp_target_alloc_shared(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_shared",
        size,
        device_num,
        AllocKind::Shared,
    )
}

/// Dynamic shared memory exists only inside device kernels; on the host
/// LLVM 14 answers null, and so do we.
extern "C-unwind" fn llvm_omp_get_dynamic_shared() -> *mut c_void {
    null_mut()
}

/// Ownership: `device_ptr` came from `omp_target_alloc` (or a sibling) on
/// `device_num`; after the call it is invalid.
///
/// # Safety
/// `device_ptr` is null or came from `omp_target_alloc` on `device_num`
/// and was not freed since.
unsafe extern "C-unwind" fn omp_target_free(device_ptr: *mut c_void, device_num: c_int) {
    guard("omp_target_free", (), || {
        // SAFETY: `device_ptr` came from `omp_target_alloc` on `device_num`
        // (our caller's contract), as `target_free` requires.
        with_session(|s| unsafe { s.target_free(device_ptr, device_num) });
    })
}

extern "C-unwind" fn omp_target_is_present(ptr: *const c_void, device_num: c_int) -> c_int {
    guard("omp_target_is_present", 0, || {
        with_session(|s| s.target_is_present(ptr, device_num))
    })
}

/// # Safety
/// As OpenMP requires: each pointer, plus its offset, addresses `length`
/// bytes on its device.
unsafe extern "C-unwind" fn omp_target_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    // SAFETY: our caller's contract is `memcpy_as`'s.
    unsafe {
        memcpy_as(
            "omp_target_memcpy",
            dst,
            src,
            length,
            dst_offset,
            src_offset,
            dst_device,
            src_device,
        )
    }
}

/// # Safety
/// As OpenMP requires: the five arrays hold `num_dims` elements each and
/// describe sub-volumes inside both buffers.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn omp_target_memcpy_rect(
    dst: *mut c_void,
    src: *const c_void,
    element_size: usize,
    num_dims: c_int,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dimensions: *const usize,
    src_dimensions: *const usize,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    let rect = Rect {
        element_size,
        num_dims,
        volume,
        dst_offsets,
        src_offsets,
        dst_dimensions,
        src_dimensions,
    };
    // SAFETY: our caller's contract is `memcpy_rect_as`'s.
    unsafe {
        memcpy_rect_as(
            "omp_target_memcpy_rect",
            dst,
            src,
            rect,
            dst_device,
            src_device,
        )
    }
}

extern "C-unwind" fn omp_target_associate_ptr(
    host_ptr: *const c_void,
    device_ptr: *const c_void,
    size: usize,
    device_offset: usize,
    device_num: c_int,
) -> c_int {
    guard("omp_target_associate_ptr", OFFLOAD_FAIL, || {
        with_session(|s| {
            s.target_associate_ptr(host_ptr, device_ptr, size, device_offset, device_num)
        })
    })
}

extern "C-unwind" fn omp_target_disassociate_ptr(
    host_ptr: *const c_void,
    device_num: c_int,
) -> c_int {
    guard("omp_target_disassociate_ptr", OFFLOAD_FAIL, || {
        with_session(|s| s.target_disassociate_ptr(host_ptr, device_num))
    })
}

export_c!(
    omp_get_num_devices,
    omp_get_initial_device,
    omp_target_alloc,
    llvm_omp_target_alloc_device,
    llvm_omp_target_alloc_host,
    llvm_omp_target_alloc_shared,
    llvm_omp_get_dynamic_shared,
    omp_target_free,
    omp_target_is_present,
    omp_target_memcpy,
    omp_target_memcpy_rect,
    omp_target_associate_ptr,
    omp_target_disassociate_ptr,
);
