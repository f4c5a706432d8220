//! The `omp_target_*` device memory routines and LLVM's allocation
//! extensions, with LLVM 14's return values and messages for bad input
//! (they never crash on it: invalid devices, null pointers and zero sizes
//! are refused).

use super::error::OffloadError;
use super::{DeviceCtx, Offload};
use crate::abi::{AllocKind, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use crate::device::DevicePtr;
use crate::mapping::UnmapRequest;
use std::ffi::c_void;

impl<'a> Offload<'a> {
    fn is_initial(&self, device: i32) -> bool {
        device == self.registry.initial_device()
    }

    /// `omp_target_alloc` (`kind = Default`), `llvm_omp_target_alloc_device`,
    /// `_host` and `_shared`: null for a zero size or a device that is not
    /// ready; `malloc` for the initial device.
    pub fn target_alloc(&self, size: usize, device_num: i32, kind: AllocKind) -> *mut c_void {
        if size == 0 {
            return std::ptr::null_mut();
        }
        if self.is_initial(device_num) {
            // SAFETY: plain malloc; the caller frees with omp_target_free.
            return unsafe { libc::malloc(size) };
        }
        let Some(dev) = self.ready_device(device_num.into()) else {
            return std::ptr::null_mut();
        };
        dev.ops
            .alloc(size, std::ptr::null_mut(), kind)
            .map(|p| p.0)
            .unwrap_or(std::ptr::null_mut())
    }

    /// `omp_target_free`: nothing for null or a device that is not ready;
    /// `free` for the initial device.
    ///
    /// # Safety
    /// For the initial device, `device_ptr` came from `malloc`.
    pub unsafe fn target_free(&self, device_ptr: *mut c_void, device_num: i32) {
        if device_ptr.is_null() {
            return;
        }
        if self.is_initial(device_num) {
            libc::free(device_ptr);
            return;
        }
        let Some(dev) = self.ready_device(device_num.into()) else {
            return;
        };
        // LLVM ignores the plugin's result.
        let _ = dev.ops.free(DevicePtr(device_ptr));
    }

    /// `omp_target_is_present`: 1 if `ptr` is mapped on the device (always
    /// for the initial device), 0 otherwise. Does not initialise the device.
    pub fn target_is_present(&self, ptr: *const c_void, device_num: i32) -> i32 {
        if ptr.is_null() {
            return 0;
        }
        if self.is_initial(device_num) {
            return 1;
        }
        let Some(dev) = self.device(device_num.into()) else {
            return 0;
        };
        let usm = self.registry.unified_shared_memory();
        let tpr = dev.ops.mappings().get_tgt_ptr_begin(&UnmapRequest {
            host_begin: ptr as usize,
            size: 0,
            update_refcount: false,
            hold: false,
            must_contain: false,
            force_delete: false,
            unified_shared_memory: usm,
        });
        if let Some(event) = &tpr.event {
            self.info_map_event(dev.id, event);
        }
        // Under unified shared memory a host pointer is "found" but has no
        // device counterpart.
        let present = if usm {
            !tpr.is_host_ptr
        } else {
            tpr.target.is_some()
        };
        i32::from(present)
    }

    /// `omp_target_memcpy`: 0 on success, `OFFLOAD_FAIL` (-1) otherwise.
    ///
    /// # Safety
    /// `dst + dst_offset` and `src + src_offset` name `length` bytes of
    /// memory of the respective devices.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target_memcpy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        length: usize,
        dst_offset: usize,
        src_offset: usize,
        dst_device: i32,
        src_device: i32,
    ) -> i32 {
        if length == 0 {
            return OFFLOAD_SUCCESS;
        }
        if dst.is_null() || src.is_null() {
            self.report(OffloadError::MemcpyInvalidArguments);
            return OFFLOAD_FAIL;
        }
        let src_dev = if self.is_initial(src_device) {
            None
        } else {
            match self.ready_device(src_device.into()) {
                Some(dev) => Some(dev),
                None => {
                    self.report(OffloadError::MemcpyFailed);
                    return OFFLOAD_FAIL;
                }
            }
        };
        let dst_dev = if self.is_initial(dst_device) {
            None
        } else {
            match self.ready_device(dst_device.into()) {
                Some(dev) => Some(dev),
                None => {
                    self.report(OffloadError::MemcpyFailed);
                    return OFFLOAD_FAIL;
                }
            }
        };
        let src_addr = (src as usize).wrapping_add(src_offset);
        let dst_addr = (dst as usize).wrapping_add(dst_offset);
        let size = length as i64;
        let ok = match (src_dev, dst_dev) {
            (None, None) => {
                std::ptr::copy(src_addr as *const u8, dst_addr as *mut u8, length);
                true
            }
            (None, Some(dst_dev)) => self.submit(&dst_dev, dst_addr, src_addr, size).is_ok(),
            (Some(src_dev), None) => self.retrieve(&src_dev, dst_addr, src_addr, size).is_ok(),
            (Some(src_dev), Some(dst_dev)) => {
                self.copy_device_to_device(&src_dev, src_addr, &dst_dev, dst_addr, length)
            }
        };
        if ok {
            OFFLOAD_SUCCESS
        } else {
            OFFLOAD_FAIL
        }
    }

    /// Device to device: the plugin's exchange if both devices are its own
    /// and it can, else through a host buffer.
    unsafe fn copy_device_to_device(
        &self,
        src_dev: &DeviceCtx<'a>,
        src_addr: usize,
        dst_dev: &DeviceCtx<'a>,
        dst_addr: usize,
        length: usize,
    ) -> bool {
        if src_dev.slot.plugin == dst_dev.slot.plugin
            && src_dev.ops.is_data_exchangable(dst_dev.ops)
            && src_dev
                .ops
                .data_exchange(
                    DevicePtr(src_addr as *mut c_void),
                    dst_dev.ops,
                    DevicePtr(dst_addr as *mut c_void),
                    length,
                )
                .is_ok()
        {
            return true;
        }
        let mut buffer = vec![0u8; length];
        let staging = buffer.as_mut_ptr() as usize;
        self.retrieve(src_dev, staging, src_addr, length as i64)
            .is_ok()
            && self
                .submit(dst_dev, dst_addr, staging, length as i64)
                .is_ok()
    }

    /// `omp_target_memcpy_rect`: with both pointers null, the number of
    /// dimensions supported (`INT_MAX`); else 0 or a failure code.
    ///
    /// # Safety
    /// The arrays hold `num_dims` elements and describe memory of the
    /// respective devices.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target_memcpy_rect(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        element_size: usize,
        num_dims: i32,
        volume: *const usize,
        dst_offsets: *const usize,
        src_offsets: *const usize,
        dst_dimensions: *const usize,
        src_dimensions: *const usize,
        dst_device: i32,
        src_device: i32,
    ) -> i32 {
        if dst.is_null() && src.is_null() {
            return i32::MAX;
        }
        if dst.is_null()
            || src.is_null()
            || element_size < 1
            || num_dims < 1
            || volume.is_null()
            || dst_offsets.is_null()
            || src_offsets.is_null()
            || dst_dimensions.is_null()
            || src_dimensions.is_null()
        {
            self.report(OffloadError::MemcpyRectInvalidArguments);
            return OFFLOAD_FAIL;
        }
        if num_dims == 1 {
            return self.target_memcpy(
                dst,
                src,
                element_size.wrapping_mul(*volume),
                element_size.wrapping_mul(*dst_offsets),
                element_size.wrapping_mul(*src_offsets),
                dst_device,
                src_device,
            );
        }
        let mut dst_slice = element_size;
        let mut src_slice = element_size;
        for i in 1..num_dims as usize {
            dst_slice = dst_slice.wrapping_mul(*dst_dimensions.add(i));
            src_slice = src_slice.wrapping_mul(*src_dimensions.add(i));
        }
        let dst_off = (*dst_offsets).wrapping_mul(dst_slice);
        let src_off = (*src_offsets).wrapping_mul(src_slice);
        // LLVM leaves the result uninitialised when volume[0] is 0.
        let mut rc = OFFLOAD_SUCCESS;
        for i in 0..*volume {
            rc = self.target_memcpy_rect(
                (dst as usize)
                    .wrapping_add(dst_off)
                    .wrapping_add(dst_slice.wrapping_mul(i)) as *mut c_void,
                (src as usize)
                    .wrapping_add(src_off)
                    .wrapping_add(src_slice.wrapping_mul(i)) as *const c_void,
                element_size,
                num_dims - 1,
                volume.add(1),
                dst_offsets.add(1),
                src_offsets.add(1),
                dst_dimensions.add(1),
                src_dimensions.add(1),
                dst_device,
                src_device,
            );
            if rc != 0 {
                return rc;
            }
        }
        rc
    }

    /// `omp_target_associate_ptr`: map `[host_ptr, host_ptr+size)` to
    /// `device_ptr + device_offset` with an infinite count.
    pub fn target_associate_ptr(
        &self,
        host_ptr: *const c_void,
        device_ptr: *const c_void,
        size: usize,
        device_offset: usize,
        device_num: i32,
    ) -> i32 {
        if host_ptr.is_null() || device_ptr.is_null() || size == 0 {
            self.report(OffloadError::AssociateInvalidArguments);
            return OFFLOAD_FAIL;
        }
        if self.is_initial(device_num) {
            self.report(OffloadError::AssociateOnHost);
            return OFFLOAD_FAIL;
        }
        let Some(dev) = self.ready_device(device_num.into()) else {
            self.report(OffloadError::AssociateFailed);
            return OFFLOAD_FAIL;
        };
        let device_addr = (device_ptr as usize).wrapping_add(device_offset);
        match dev
            .ops
            .mappings()
            .associate(host_ptr as usize, device_addr, size)
        {
            Ok(()) => OFFLOAD_SUCCESS,
            Err(error) => {
                self.report(OffloadError::Mapping(error));
                OFFLOAD_FAIL
            }
        }
    }

    /// `omp_target_disassociate_ptr`.
    pub fn target_disassociate_ptr(&self, host_ptr: *const c_void, device_num: i32) -> i32 {
        if host_ptr.is_null() {
            self.report(OffloadError::DisassociateInvalidHostPtr);
            return OFFLOAD_FAIL;
        }
        if self.is_initial(device_num) {
            self.report(OffloadError::DisassociateOnHost);
            return OFFLOAD_FAIL;
        }
        let Some(dev) = self.ready_device(device_num.into()) else {
            self.report(OffloadError::DisassociateFailed);
            return OFFLOAD_FAIL;
        };
        match dev.ops.mappings().disassociate(host_ptr as usize) {
            Ok(()) => OFFLOAD_SUCCESS,
            Err(error) => {
                self.report(OffloadError::Mapping(error));
                OFFLOAD_FAIL
            }
        }
    }
}
