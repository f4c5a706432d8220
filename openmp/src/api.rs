//! The `omp_target_*` device memory routines and LLVM's allocation
//! extensions, with LLVM 14's return values and messages for bad input
//! (they never crash on it: invalid devices, null pointers and zero sizes
//! are refused). A device number that names no device is such a soft
//! failure for LLVM 14's callers only: for LLVM 19's and 22's the shim ends
//! the process first, as their runtimes do (`ffi/program/shim/src/session/device_number.rs`).
//!
//! Where LLVM 14 goes on with bad input and crashes or corrupts memory, we
//! refuse it instead:
//! * `omp_target_memcpy` whose `ptr + offset`, or the `length` bytes from
//!   there, wrap around the address space (LLVM adds with wrapping
//!   arithmetic, so an offset of `(size_t)-8` writes before the block):
//!   LLVM's "invalid arguments" error, `OFFLOAD_FAIL`;
//! * `omp_target_memcpy_rect` whose offset and size products wrap, or
//!   whose block runs past the array in some dimension (`offsets[d] +
//!   volume[d] > dimensions[d]`, on either side: LLVM 14 copies outside
//!   the arrays and typically crashes): the same, checked for the whole
//!   copy before anything is copied;
//! * `omp_target_free` of a pointer the device did not allocate (or freed
//!   already): LLVM passes it to the plugin's free (undefined behaviour);
//!   we free nothing and print a `Libomptarget error:` line of our own
//!   that names the cause (the device never allocated it or freed it
//!   already, or its plugin refused, with the plugin's error);
//! * `omp_target_free(p, 0)` of a block allocated as `omp_target_alloc(n,
//!   0)` before any device existed (device 0 was the host then, a real
//!   device now): LLVM hands the host block to the device's free; we give
//!   it back to `free` (`host_blocks`).

use super::diag::Diagnostic;
use super::error::OffloadError;
use super::info::INFO_MAPPING_EXISTS;
use super::ompt::{DataOp, DataOpKind};
use super::Release;
use super::{DeviceCtx, Offload};
use omptarget::abi::{AllocKind, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use omptarget::device::DevicePtr;
use omptarget::mapping::{HexPtr, UnmapRequest, ZeroLength};
use std::ffi::c_void;

impl<'a> Offload<'a> {
    fn is_initial(&self, device: i32) -> bool {
        device == self.registry.initial_device()
    }

    /// `omp_target_alloc` (`kind = Default`), `llvm_omp_target_alloc_device`,
    /// `_host` and `_shared`: null for a zero size or a device that is not
    /// ready; `malloc` for the initial device.
    pub fn target_alloc(&self, size: usize, device_num: i32, kind: AllocKind) -> *mut c_void {
        let _ompt = self.ompt_call();
        if size == 0 {
            return std::ptr::null_mut();
        }
        if self.is_initial(device_num) {
            return self.host_alloc(size, device_num);
        }
        let Some(dev) = self.api_device(device_num.into(), true) else {
            return std::ptr::null_mut();
        };
        // SAFETY: no host pointer.
        unsafe { self.dev_alloc(&dev, size, std::ptr::null_mut(), kind) }
            .map(|p| p.as_ptr())
            .unwrap_or(std::ptr::null_mut())
    }

    /// [`Offload::target_alloc`] on the initial device. Out of line (as are
    /// the host and error paths of [`Offload::target_free`]): inlined, its
    /// locked set of early blocks made the device path save registers and
    /// reserve a large frame on every call.
    #[inline(never)]
    fn host_alloc(&self, size: usize, device_num: i32) -> *mut c_void {
        // SAFETY: plain malloc; the caller frees with omp_target_free.
        let block = unsafe { libc::malloc(size) };
        if device_num == 0 && !block.is_null() {
            // "Device 0" is the host only until a device appears.
            self.registry.early_host_blocks.record(block as usize);
        }
        block
    }

    /// `omp_target_free`: nothing for null or a device that is not ready;
    /// `free` for the initial device. A pointer the device refuses to free
    /// (not a live allocation of it, or the plugin failed) is left alone
    /// and reported on one `Libomptarget error:` line.
    ///
    /// # Safety
    /// For the initial device, `device_ptr` came from `malloc`.
    pub unsafe fn target_free(&self, device_ptr: *mut c_void, device_num: i32) {
        let _ompt = self.ompt_call();
        if device_ptr.is_null() {
            return;
        }
        if self.is_initial(device_num) {
            // SAFETY: our `# Safety`: for the initial device `device_ptr`
            // came from `malloc`.
            unsafe { self.host_free(device_ptr) };
            return;
        }
        let Some(dev) = self.api_device(device_num.into(), true) else {
            self.free_if_early(device_ptr);
            return;
        };
        // SAFETY: `omp_target_free`'s contract (this function's): the
        // program frees memory it got from `omp_target_alloc` and no longer
        // uses; unknown pointers are refused by the device.
        if let Err(error) = unsafe { self.dev_free(&dev, DevicePtr::from_raw(device_ptr)) } {
            self.free_refused(device_ptr, device_num, error);
        }
    }

    /// [`Offload::target_free`] on the initial device.
    ///
    /// # Safety
    /// `device_ptr` came from `malloc`.
    #[inline(never)]
    unsafe fn host_free(&self, device_ptr: *mut c_void) {
        // Forget it if it was also an early block (see `free_if_early`).
        self.registry.early_host_blocks.take(device_ptr as usize);
        // SAFETY: our `# Safety`.
        unsafe { libc::free(device_ptr) };
    }

    /// A block malloc'd while this device number still named the host (no
    /// device yet) is unknown to the device: the device is asked first, so
    /// an address the device did hand out is always the device's, and only
    /// its "unknown pointer" answer (or a device that is not ready)
    /// consults the set. Frees the block and says so if it was one.
    #[cold]
    fn free_if_early(&self, device_ptr: *mut c_void) -> bool {
        let early = self.registry.early_host_blocks.take(device_ptr as usize);
        if early {
            // SAFETY: an early block is one we `malloc`ed and just took
            // out of the set, so it is freed once.
            unsafe { libc::free(device_ptr) };
        }
        early
    }

    /// The device refused to free `device_ptr`: an early host block is
    /// freed; anything else is left alone and reported.
    #[cold]
    #[inline(never)]
    fn free_refused(&self, device_ptr: *mut c_void, device_num: i32, error: omptarget::Error) {
        if matches!(error, omptarget::Error::UnknownDevicePointer { .. })
            && self.free_if_early(device_ptr)
        {
            return;
        }
        // The error numbers devices the core's way; the line uses the
        // program's device number and says which cause it was.
        tracing::debug!(device = device_num, %error, "omp_target_free refused");
        let why = match error {
            omptarget::Error::UnknownDevicePointer { .. } => {
                "not allocated there, or already freed".to_owned()
            }
            other => format!("the plugin refused: {other}"),
        };
        self.host.emit(&Diagnostic::Error(format!(
            "omp_target_free: device {device_num} did not free {} ({why})",
            HexPtr(device_ptr as usize)
        )));
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
        let Some(dev) = self.api_device(device_num.into(), false) else {
            return 0;
        };
        let usm = self.registry.unified_shared_memory();
        // LLVM 14 asks about zero bytes, LLVM 15+ about one (a zero-length
        // lookup would match a pointer by the section mapped through it).
        // Both mean "the mapping `ptr` lies in"; only the INFO line's size
        // shows which, so the release is asked only when that line prints.
        let size = if self.registry.info_enabled(INFO_MAPPING_EXISTS)
            && self.host.caller_release() >= Release::Llvm19
        {
            1
        } else {
            0
        };
        let tpr = dev.ops.mappings().query_tgt_ptr_begin(&UnmapRequest {
            host_begin: ptr as usize,
            size,
            update_refcount: false,
            hold: false,
            must_contain: false,
            force_delete: false,
            unified_shared_memory: usm,
            zero_length: ZeroLength::Section,
            from_data_end: false,
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
    /// An address range that wraps around the address space is invalid
    /// (checked after the devices, so a bad device gets LLVM's message).
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
        let _ompt = self.ompt_call();
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
            match self.api_device(src_device.into(), true) {
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
            match self.api_device(dst_device.into(), true) {
                Some(dev) => Some(dev),
                None => {
                    self.report(OffloadError::MemcpyFailed);
                    return OFFLOAD_FAIL;
                }
            }
        };
        let (Some(src_addr), Some(dst_addr)) = (
            checked_range(src as usize, src_offset, length),
            checked_range(dst as usize, dst_offset, length),
        ) else {
            self.report(OffloadError::MemcpyInvalidArguments);
            return OFFLOAD_FAIL;
        };
        let size = length as i64;
        let ok = match (src_dev, dst_dev) {
            (None, None) => {
                // SAFETY: our `# Safety`: both ranges are `length` bytes of
                // host memory (readable source, writable destination);
                // `ptr::copy` allows them to overlap.
                unsafe { std::ptr::copy(src_addr as *const u8, dst_addr as *mut u8, length) };
                true
            }
            (None, Some(dst_dev)) => {
                // SAFETY: our `# Safety`: `src_addr..+length` is readable
                // host memory and `dst_addr` `length` bytes of `dst_dev`'s.
                unsafe { self.submit(&dst_dev, dst_addr, src_addr, size) }.is_ok()
            }
            (Some(src_dev), None) => {
                // SAFETY: our `# Safety`: `dst_addr..+length` is writable
                // host memory and `src_addr` `length` bytes of `src_dev`'s.
                unsafe { self.retrieve(&src_dev, dst_addr, src_addr, size) }.is_ok()
            }
            (Some(src_dev), Some(dst_dev)) => {
                // SAFETY: our `# Safety`: each address names `length` bytes
                // of its device's memory.
                unsafe {
                    self.copy_device_to_device(&src_dev, src_addr, &dst_dev, dst_addr, length)
                }
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
    ///
    /// # Safety
    /// `src_addr` names `length` bytes of `src_dev`'s memory and `dst_addr`
    /// `length` bytes of `dst_dev`'s.
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
            // SAFETY: our `# Safety`: `src_addr` is memory of `src_dev` and
            // `dst_addr` of `dst_dev`, `length` bytes each.
            && self
                .traced_op(
                    // LLVM reports an exchange as a copy from the device,
                    // numbering both devices as their plugin does.
                    DataOp {
                        kind: DataOpKind::FromDevice,
                        src: src_addr,
                        src_device: src_dev.slot.local as i32,
                        dst: dst_addr,
                        dst_device: dst_dev.slot.local as i32,
                        bytes: length,
                    },
                    // SAFETY: our `# Safety`: `src_addr` is memory of
                    // `src_dev` and `dst_addr` of `dst_dev`, `length` bytes
                    // each.
                    || unsafe {
                        src_dev.ops.data_exchange(
                            DevicePtr::from_raw(src_addr as *mut c_void),
                            dst_dev.ops,
                            DevicePtr::from_raw(dst_addr as *mut c_void),
                            length,
                        )
                    },
                    |_, _| {},
                )
                .is_ok()
        {
            return true;
        }
        let mut buffer = vec![0u8; length];
        let staging = buffer.as_mut_ptr() as usize;
        // SAFETY: `staging` is the live `buffer`, `length` writable bytes;
        // `src_addr` names `length` bytes of `src_dev` (our `# Safety`).
        unsafe { self.retrieve(src_dev, staging, src_addr, length as i64) }.is_ok()
            // SAFETY: `staging` holds `length` readable bytes; `dst_addr`
            // names `length` bytes of `dst_dev` (our `# Safety`).
            && unsafe { self.submit(dst_dev, dst_addr, staging, length as i64) }.is_ok()
    }

    /// `omp_target_memcpy_rect`: with both pointers null, the number of
    /// dimensions supported (`INT_MAX`); else 0 or a failure code. A block
    /// that does not fit in either array (`offsets[d] + volume[d] >
    /// dimensions[d]` for some `d`), and offsets and sizes whose products
    /// or sums wrap around the address space, are invalid arguments,
    /// refused before anything is copied.
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
        let _ompt = self.ompt_call();
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
        let dims = num_dims as usize;
        // Called only with the five arrays checked non-null above.
        let array = |p: *const usize| {
            // SAFETY: `p` is one of those arrays: non-null (checked above)
            // with `num_dims` elements (our `# Safety`); the slices are used
            // only while this call runs.
            unsafe { std::slice::from_raw_parts(p, dims) }
        };
        let volume = array(volume);
        // An empty block copies nothing (LLVM: zero iterations, or
        // zero-length copies).
        if volume.contains(&0) {
            return OFFLOAD_SUCCESS;
        }
        let side = |base: usize, offsets, dimensions, device| {
            RectSide::new(base, element_size, volume, offsets, dimensions, device)
        };
        let (Some(dst), Some(src)) = (
            side(
                dst as usize,
                array(dst_offsets),
                array(dst_dimensions),
                dst_device,
            ),
            side(
                src as usize,
                array(src_offsets),
                array(src_dimensions),
                src_device,
            ),
        ) else {
            self.report(OffloadError::MemcpyRectInvalidArguments);
            return OFFLOAD_FAIL;
        };
        // SAFETY: our `# Safety`, and both sides were checked by
        // `RectSide::new` for this `volume` (`copy_rect`'s contract).
        unsafe { self.copy_rect(volume, 0, &dst, dst.base, &src, src.base) }
    }

    /// Copy dimensions `dim..` of the block whose dimension `dim` starts at
    /// `dst_at` / `src_at` (LLVM's recursion: one `omp_target_memcpy` per
    /// innermost row). Stops at the first failure.
    ///
    /// # Safety
    /// As [`Offload::target_memcpy_rect`]; both sides were checked by
    /// [`RectSide::new`] for this `volume`, so no address below overflows.
    unsafe fn copy_rect(
        &self,
        volume: &[usize],
        dim: usize,
        dst: &RectSide<'_>,
        dst_at: usize,
        src: &RectSide<'_>,
        src_at: usize,
    ) -> i32 {
        if dim + 1 == volume.len() {
            // The innermost stride is the element size.
            // SAFETY: our `# Safety`: the row lies inside the checked
            // block of each side's memory, on its device.
            return unsafe {
                self.target_memcpy(
                    dst_at as *mut c_void,
                    src_at as *const c_void,
                    volume[dim] * dst.strides[dim],
                    dst.offsets[dim] * dst.strides[dim],
                    src.offsets[dim] * src.strides[dim],
                    dst.device,
                    src.device,
                )
            };
        }
        for i in 0..volume[dim] {
            // SAFETY: our `# Safety`: the sub-block starting at index `i`
            // of dimension `dim` lies inside the checked block.
            let rc = unsafe {
                self.copy_rect(
                    volume,
                    dim + 1,
                    dst,
                    dst_at + (dst.offsets[dim] + i) * dst.strides[dim],
                    src,
                    src_at + (src.offsets[dim] + i) * src.strides[dim],
                )
            };
            if rc != OFFLOAD_SUCCESS {
                return rc;
            }
        }
        OFFLOAD_SUCCESS
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
        let _ompt = self.ompt_call();
        if host_ptr.is_null() || device_ptr.is_null() || size == 0 {
            self.report(OffloadError::AssociateInvalidArguments);
            return OFFLOAD_FAIL;
        }
        if self.is_initial(device_num) {
            self.report(OffloadError::AssociateOnHost);
            return OFFLOAD_FAIL;
        }
        let Some(dev) = self.api_device(device_num.into(), true) else {
            self.report(OffloadError::AssociateFailed);
            return OFFLOAD_FAIL;
        };
        // LLVM reports the device pointer without the offset.
        self.trace_association(DataOp {
            kind: DataOpKind::Associate,
            src: host_ptr as usize,
            src_device: self.initial_device(),
            dst: device_ptr as usize,
            dst_device: dev.id,
            bytes: size,
        });
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
        let _ompt = self.ompt_call();
        if host_ptr.is_null() {
            self.report(OffloadError::DisassociateInvalidHostPtr);
            return OFFLOAD_FAIL;
        }
        if self.is_initial(device_num) {
            self.report(OffloadError::DisassociateOnHost);
            return OFFLOAD_FAIL;
        }
        let Some(dev) = self.api_device(device_num.into(), true) else {
            self.report(OffloadError::DisassociateFailed);
            return OFFLOAD_FAIL;
        };
        self.trace_association(DataOp {
            kind: DataOpKind::Disassociate,
            src: host_ptr as usize,
            src_device: self.initial_device(),
            dst: 0,
            dst_device: dev.id,
            bytes: 0,
        });
        match dev.ops.mappings().disassociate(host_ptr as usize) {
            Ok(()) => OFFLOAD_SUCCESS,
            Err(error) => {
                self.report(OffloadError::Mapping(error));
                OFFLOAD_FAIL
            }
        }
    }
}

/// `base + offset` if neither it nor the `length` bytes from it wrap around
/// the address space.
fn checked_range(base: usize, offset: usize, length: usize) -> Option<usize> {
    let start = base.checked_add(offset)?;
    start.checked_add(length)?;
    Some(start)
}

/// One side (destination or source) of `omp_target_memcpy_rect`, with the
/// byte stride of each dimension, checked so that no address of the copy
/// wraps around the address space.
struct RectSide<'s> {
    base: usize,
    offsets: &'s [usize],
    /// `strides[d]`: bytes from one index of dimension `d` to the next
    /// (`element_size` times the sizes of the dimensions inside it).
    strides: Vec<usize>,
    device: i32,
}

impl<'s> RectSide<'s> {
    /// `None` if the copied block (`volume` elements from `offsets`, none
    /// of them 0) does not fit in `dimensions` in some dimension, or a
    /// stride, an offset or the block's end overflows. LLVM 14 checks
    /// neither and copies outside the array; `dimensions[0]` only bounds
    /// the block (it is no stride factor, as in LLVM).
    fn new(
        base: usize,
        element_size: usize,
        volume: &[usize],
        offsets: &'s [usize],
        dimensions: &[usize],
        device: i32,
    ) -> Option<Self> {
        let mut strides = vec![0; volume.len()];
        let mut stride = element_size;
        // One past the last byte copied, from `base`; every address the
        // copy computes lies between `base` and `base + end`.
        let mut end = element_size;
        for d in (0..volume.len()).rev() {
            strides[d] = stride;
            // Outside the array: one row would spill into the next (or
            // past the end), so the caller's rectangle is not what it said.
            if offsets[d].checked_add(volume[d])? > dimensions[d] {
                return None;
            }
            let last_index = offsets[d].checked_add(volume[d] - 1)?;
            end = end.checked_add(last_index.checked_mul(stride)?)?;
            if d > 0 {
                stride = stride.checked_mul(dimensions[d])?;
            }
        }
        base.checked_add(end)?;
        Some(RectSide {
            base,
            offsets,
            strides,
            device,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_that_wrap_around_are_refused() {
        assert_eq!(checked_range(0x1000, 0x10, 0x20), Some(0x1010));
        assert_eq!(checked_range(0x1000, 8usize.wrapping_neg(), 4), None);
        assert_eq!(checked_range(0x1000, 0, usize::MAX), None);
        assert_eq!(checked_range(usize::MAX - 8, 4, 4), Some(usize::MAX - 4));
        assert_eq!(checked_range(usize::MAX - 8, 4, 5), None);
    }

    #[test]
    fn rect_strides_and_extent() {
        let volume = [2, 3];
        let side = RectSide::new(0x1000, 4, &volume, &[1, 2], &[99, 6], 0).unwrap();
        assert_eq!(side.strides, [24, 4]);
        // Last element: row 2, column 4: 2 * 24 + 4 * 4, plus its 4 bytes.
        let end = 2 * 24 + 4 * 4 + 4;
        assert!(RectSide::new(usize::MAX - end, 4, &volume, &[1, 2], &[99, 6], 0).is_some());
        assert!(RectSide::new(usize::MAX - end + 1, 4, &volume, &[1, 2], &[99, 6], 0).is_none());
        assert!(RectSide::new(0, 4, &volume, &[usize::MAX, 0], &[1, 6], 0).is_none());
        assert!(RectSide::new(0, 4, &volume, &[0, 0], &[1, usize::MAX], 0).is_none());
    }

    #[test]
    fn rect_blocks_outside_the_array_are_refused() {
        let volume = [2, 3];
        // Exactly fits: rows 1..3 of 3, columns 3..6 of 6.
        assert!(RectSide::new(0x1000, 4, &volume, &[1, 3], &[3, 6], 0).is_some());
        // One column too far (would spill into the next row).
        assert!(RectSide::new(0x1000, 4, &volume, &[1, 4], &[3, 6], 0).is_none());
        // One row too far (past the end of the array).
        assert!(RectSide::new(0x1000, 4, &volume, &[2, 3], &[3, 6], 0).is_none());
        // The volume alone is larger than a dimension.
        assert!(RectSide::new(0x1000, 4, &[1, 7], &[0, 0], &[3, 6], 0).is_none());
        // offset + volume wraps around.
        assert!(RectSide::new(0x1000, 4, &volume, &[0, usize::MAX], &[3, 6], 0).is_none());
    }
}
