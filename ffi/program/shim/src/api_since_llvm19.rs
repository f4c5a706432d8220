//! The OpenMP API calls that LLVM 19 and 22 export and LLVM 14 did not:
//! `omp_get_mapped_ptr`, `omp_get_device_num`, `omp_target_memset`, the
//! `_async` copies and fill, and `llvm_omp_target_free_*`; and those LLVM 22
//! added: `omp_get_uid_from_device`, `omp_get_device_from_uid`,
//! `omp_target_is_accessible`.
//!
//! The `_async` calls run as LLVM runs them: a libomp hidden-helper task
//! ordered by the caller's dependence objects ([`crate::helper_task`]).

use crate::boundary::guard;
use crate::copies::memset_as;
use crate::export::export_c;
use crate::helper_task::{submit, AsyncOp};
use crate::libomp::DependInfo;
use crate::session::lifecycle::with_session;
use omptarget_abi::OFFLOAD_FAIL;
use omptarget_openmp::api_since_llvm22::OMP_INVALID_DEVICE;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::{null, null_mut};

extern "C-unwind" fn omp_get_mapped_ptr(ptr: *const c_void, device_num: c_int) -> *mut c_void {
    guard("omp_get_mapped_ptr", null_mut(), || {
        with_session(|s| s.get_mapped_ptr(ptr, device_num))
    })
}

/// On the host (where every call of this library is made) the device
/// number is the initial device's.
extern "C-unwind" fn omp_get_device_num() -> c_int {
    guard("omp_get_device_num", 0, || {
        with_session(|s| s.initial_device())
    })
}

/// # Safety
/// `ptr` names `len` bytes of memory of `device_num`.
unsafe extern "C-unwind" fn omp_target_memset(
    ptr: *mut c_void,
    byte: c_int,
    len: usize,
    device_num: c_int,
) -> *mut c_void {
    // SAFETY: our caller's contract is `memset_as`'s.
    unsafe { memset_as("omp_target_memset", ptr, byte, len, device_num) }
}

/// A task that fills `len` bytes after the tasks the dependence objects
/// name; `ptr` back (LLVM ignores the submission's result here). A null
/// `ptr` or no bytes: nothing, at once.
///
/// # Safety
/// As `omp_target_memset`, until the task has run; `depobj_list` holds
/// `depobj_count` dependence objects.
unsafe extern "C-unwind" fn omp_target_memset_async(
    ptr: *mut c_void,
    byte: c_int,
    len: usize,
    device_num: c_int,
    depobj_count: c_int,
    depobj_list: *const *const DependInfo,
) -> *mut c_void {
    if ptr.is_null() || len == 0 {
        return ptr;
    }
    let op = AsyncOp::Memset {
        ptr,
        byte,
        len,
        device: device_num,
    };
    // SAFETY: our caller's contract is `submit`'s.
    unsafe { submit("omp_target_memset_async", op, depobj_count, depobj_list) };
    ptr
}

/// A task that copies after the tasks the dependence objects name; 0 once
/// submitted. A null `dst` or `src` fails at once, as in LLVM.
///
/// # Safety
/// As `omp_target_memcpy`, until the task has run; `depobj_list` holds
/// `depobj_count` dependence objects.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn omp_target_memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device: c_int,
    src_device: c_int,
    depobj_count: c_int,
    depobj_list: *const *const DependInfo,
) -> c_int {
    if dst.is_null() || src.is_null() {
        return OFFLOAD_FAIL;
    }
    let op = AsyncOp::Memcpy {
        dst,
        src,
        length,
        dst_offset,
        src_offset,
        dst_device,
        src_device,
    };
    // SAFETY: our caller's contract is `submit`'s.
    unsafe { submit("omp_target_memcpy_async", op, depobj_count, depobj_list) }
}

/// A task that copies a sub-volume after the tasks the dependence objects
/// name; 0 once submitted. Both pointers null asks for the dimensions
/// supported, answered at once as in LLVM; one null, or a shape the
/// blocking call refuses (no dimension, a null array, element size 0), is
/// refused at once by that call with its error line (LLVM submits those
/// and the task fails unseen).
///
/// # Safety
/// As `omp_target_memcpy_rect`, until the task has run; `depobj_list`
/// holds `depobj_count` dependence objects.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn omp_target_memcpy_rect_async(
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
    depobj_count: c_int,
    depobj_list: *const *const DependInfo,
) -> c_int {
    let rect = crate::rect::Rect {
        element_size,
        num_dims,
        volume,
        dst_offsets,
        src_offsets,
        dst_dimensions,
        src_dimensions,
    };
    // SAFETY: our caller's contract: each array holds `num_dims` elements.
    let shape = match unsafe { rect.to_shape() } {
        Some(shape) if !dst.is_null() && !src.is_null() && element_size != 0 => shape,
        // Bad arguments: reported now, as the blocking form reports them.
        _ => {
            // SAFETY: our caller's contract is `memcpy_rect_as`'s.
            return unsafe {
                crate::copies::memcpy_rect_as(
                    "omp_target_memcpy_rect_async",
                    dst,
                    src,
                    rect,
                    dst_device,
                    src_device,
                )
            };
        }
    };
    let op = AsyncOp::Rect {
        dst,
        src,
        element_size,
        num_dims,
        shape,
        dst_device,
        src_device,
    };
    // SAFETY: our caller's contract is `submit`'s.
    unsafe {
        submit(
            "omp_target_memcpy_rect_async",
            op,
            depobj_count,
            depobj_list,
        )
    }
}

/// `llvm_omp_target_free_{device,host,shared}`: as `omp_target_free` (the
/// device knows each allocation's kind).
macro_rules! free_kind {
    ($($name:ident),+) => {
        $(
            /// # Safety
            /// `device_ptr` is null or came from the matching
            /// `llvm_omp_target_alloc_*` on `device_num`, not freed since.
            unsafe extern "C-unwind" fn $name(device_ptr: *mut c_void, device_num: c_int) {
                guard(stringify!($name), (), || {
                    // SAFETY: our caller's contract is `target_free`'s.
                    with_session(|s| unsafe { s.target_free(device_ptr, device_num) });
                })
            }
        )+
        export_c!($($name),+);
    };
}

free_kind!(
    llvm_omp_target_free_device,
    llvm_omp_target_free_host,
    llvm_omp_target_free_shared
);

export_c!(
    omp_get_mapped_ptr,
    omp_get_device_num,
    omp_target_memset,
    omp_target_memset_async,
    omp_target_memcpy_async,
    omp_target_memcpy_rect_async
);

/// `llvm_omp_target_lock_mem(ptr, size, device)`: pin host memory for a
/// device and return the address the device uses for it. Host devices
/// share the host's memory, so (as LLVM's host plugin) that is `ptr`
/// itself; a number that is no device is the caller's release's error
/// (LLVM 19/22: fatal, the initial device's number included).
extern "C-unwind" fn llvm_omp_target_lock_mem(
    ptr: *mut c_void,
    _size: usize,
    device_num: c_int,
) -> *mut c_void {
    guard("llvm_omp_target_lock_mem", null_mut(), || {
        with_session(|s| s.lock_mem(ptr, device_num))
    })
}

/// `llvm_omp_target_unlock_mem(ptr, device)`: nothing to undo on a host
/// device.
extern "C-unwind" fn llvm_omp_target_unlock_mem(ptr: *mut c_void, device_num: c_int) {
    guard("llvm_omp_target_unlock_mem", (), || {
        with_session(|s| {
            s.lock_mem(ptr, device_num);
        })
    })
}

/// Dynamic shared memory exists only inside device kernels: null on the
/// host, as LLVM answers.
extern "C-unwind" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
    null_mut()
}

export_c!(
    llvm_omp_target_lock_mem,
    llvm_omp_target_unlock_mem,
    llvm_omp_target_dynamic_shared_alloc
);

/// `omp_get_uid_from_device(device_num)` (LLVM 22): the device's UID
/// string, alive as long as the runtime.
extern "C-unwind" fn omp_get_uid_from_device(device_num: c_int) -> *const c_char {
    guard("omp_get_uid_from_device", null(), || {
        with_session(|s| s.uid_from_device(device_num))
    })
}

/// `omp_get_device_from_uid(uid)` (LLVM 22).
///
/// # Safety
/// `uid` is null or a NUL-terminated string.
unsafe extern "C-unwind" fn omp_get_device_from_uid(uid: *const c_char) -> c_int {
    guard("omp_get_device_from_uid", OMP_INVALID_DEVICE, || {
        // SAFETY: our caller's contract is the callee's.
        with_session(|s| unsafe { s.device_from_uid(uid) })
    })
}

/// `omp_target_is_accessible(ptr, size, device_num)` (LLVM 22).
extern "C-unwind" fn omp_target_is_accessible(
    ptr: *const c_void,
    size: usize,
    device_num: c_int,
) -> c_int {
    guard("omp_target_is_accessible", 0, || {
        with_session(|s| s.target_is_accessible(ptr, size, device_num))
    })
}

export_c!(
    omp_get_uid_from_device,
    omp_get_device_from_uid,
    omp_target_is_accessible
);
