//! The device-memory calls LLVM 19 and 22 added to the OpenMP API:
//! `omp_get_mapped_ptr` and `omp_target_memset` (the `_async` variants and
//! `llvm_omp_target_free_*` are the shim's, over these and `api`'s).
//!
//! Semantics are LLVM 19's `OpenMP/API.cpp`, checked by the differential
//! programs `mapped_ptr.c` and `target_memset.c` built with clang 19 and 22.

use super::Offload;
use omptarget::mapping::{UnmapRequest, ZeroLength};
use std::ffi::c_void;

impl Offload<'_> {
    /// `omp_get_mapped_ptr(ptr, device_num)`: the device address `ptr` is
    /// mapped to; `ptr` itself for the initial device; null (with LLVM's
    /// `omptarget error: Call to omp_get_mapped_ptr with nullptr.`) for a
    /// null `ptr`, null for a device number past the last device or data
    /// not mapped there. A negative device number is LLVM's fatal error,
    /// which the shim raises before calling this (it is `None` here).
    pub fn get_mapped_ptr(&self, ptr: *const c_void, device_num: i32) -> *mut c_void {
        if ptr.is_null() {
            self.host.emit(&super::Diagnostic::Error(
                "Call to omp_get_mapped_ptr with nullptr.".into(),
            ));
            return std::ptr::null_mut();
        }
        let initial = self.registry.initial_device();
        if device_num == initial {
            return ptr as *mut c_void;
        }
        if device_num > initial {
            return std::ptr::null_mut();
        }
        let Some(dev) = self.api_device(device_num.into(), false) else {
            return std::ptr::null_mut();
        };
        let tpr = dev.ops.mappings().get_tgt_ptr_begin(&UnmapRequest {
            host_begin: ptr as usize,
            size: 1,
            update_refcount: false,
            hold: false,
            must_contain: false,
            force_delete: false,
            unified_shared_memory: self.registry.unified_shared_memory(),
            // One byte: no release matches it as a zero-length section.
            zero_length: ZeroLength::Section,
            from_data_end: false,
        });
        if tpr.is_host_ptr {
            return ptr as *mut c_void;
        }
        tpr.target
            .map_or(std::ptr::null_mut(), |t| t as *mut c_void)
    }

    /// `omp_target_memset(ptr, byte, len, device_num)`: fill `len` bytes on
    /// the device with `byte`; returns `ptr`. A null `ptr` or a zero length
    /// does nothing. Like LLVM 19, a device fill goes through a host buffer
    /// and `omp_target_memcpy`; if it cannot be done, nothing is filled (the
    /// call has no way to fail) and the copy's error line says why.
    ///
    /// # Safety
    /// `ptr` names `len` bytes of memory of `device_num` (host memory for
    /// the initial device).
    pub unsafe fn target_memset(
        &self,
        ptr: *mut c_void,
        byte: i32,
        len: usize,
        device_num: i32,
    ) -> *mut c_void {
        let _ompt = self.ompt_call();
        if ptr.is_null() || len == 0 {
            return ptr;
        }
        if device_num == self.registry.initial_device() {
            // SAFETY: our `# Safety`: `len` bytes of host memory.
            unsafe { libc::memset(ptr, byte, len) };
            return ptr;
        }
        let shadow = vec![byte as u8; len];
        // SAFETY: `shadow` is `len` readable host bytes; `ptr` names `len`
        // bytes of `device_num` (our `# Safety`).
        let _ = unsafe {
            self.target_memcpy(
                ptr,
                shadow.as_ptr().cast(),
                len,
                0,
                0,
                device_num,
                self.registry.initial_device(),
            )
        };
        ptr
    }
}
