//! Device memory in the current context: allocations and a module's
//! globals read and written at load time. Below the device state, the
//! modules and the constructor kernels, which all use it.

use crate::driver::{check, CudaError};
use cudarc::driver::sys::{self, CUmodule, CUstream};
use omptarget_abi::AllocKind;
use std::ffi::CString;

use omptarget_plugin_kit::error::{PluginError, Result};

/// Allocate `size` bytes of `kind` in the current context.
pub fn alloc(size: usize, kind: AllocKind) -> Result<usize, CudaError> {
    // CUDA refuses zero-byte allocations; LLVM's runtime asks for them.
    let size = size.max(1);
    match kind {
        AllocKind::Device | AllocKind::Default => {
            let mut ptr = 0;
            // SAFETY: `ptr` is writable; a context is current (caller).
            check("cuMemAlloc_v2", unsafe {
                sys::cuMemAlloc_v2(&mut ptr, size)
            })?;
            Ok(ptr as usize)
        }
        AllocKind::Host => {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: as above.
            check("cuMemAllocHost_v2", unsafe {
                sys::cuMemAllocHost_v2(&mut ptr, size)
            })?;
            Ok(ptr as usize)
        }
        AllocKind::Shared => {
            let mut ptr = 0;
            // SAFETY: as above.
            check("cuMemAllocManaged", unsafe {
                sys::cuMemAllocManaged(
                    &mut ptr,
                    size,
                    sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32,
                )
            })?;
            Ok(ptr as usize)
        }
    }
}

/// Free an allocation of `kind` in the current context.
pub fn free(address: usize, kind: AllocKind) -> Result<(), CudaError> {
    match kind {
        // SAFETY: an allocation of this context, freed once (the caller
        // removed it from the table first).
        AllocKind::Host => check("cuMemFreeHost", unsafe {
            sys::cuMemFreeHost(address as *mut std::ffi::c_void)
        }),
        // SAFETY: as above (device and managed memory share cuMemFree).
        _ => check("cuMemFree_v2", unsafe { sys::cuMemFree_v2(address as u64) }),
    }
}

pub(crate) fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| PluginError::InvalidImage(format!("symbol {name:?} has a NUL")))
}

/// `cuModuleGetGlobal_v2`: address and size, `None` if the module has no
/// such symbol.
pub(crate) fn global(module: CUmodule, name: &str) -> Result<Option<(u64, usize)>> {
    let cname = c_name(name)?;
    let (mut ptr, mut size) = (0, 0);
    // SAFETY: writable out-parameters, a NUL-terminated name, a live module.
    let code = unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut size, module, cname.as_ptr()) };
    if code == sys::CUresult::CUDA_ERROR_NOT_FOUND {
        return Ok(None);
    }
    check("cuModuleGetGlobal_v2", code)?;
    Ok(Some((ptr, size)))
}

pub(crate) fn write_global(stream: CUstream, ptr: u64, bytes: &[u8]) -> Result<(), CudaError> {
    copy_sync(stream, |stream| {
        // SAFETY: `ptr` is a global of at least `bytes.len()` bytes (the
        // caller checked its size); `bytes` outlives the synchronisation.
        unsafe { sys::cuMemcpyHtoDAsync_v2(ptr, bytes.as_ptr().cast(), bytes.len(), stream) }
    })
}

pub(crate) fn read_global(stream: CUstream, ptr: u64, out: &mut [u8]) -> Result<(), CudaError> {
    copy_sync(stream, |stream| {
        // SAFETY: as `write_global`, in the other direction.
        unsafe { sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), ptr, out.len(), stream) }
    })
}

/// One copy at load time on the loader's stream, waited for.
fn copy_sync(
    stream: CUstream,
    op: impl FnOnce(CUstream) -> sys::CUresult,
) -> Result<(), CudaError> {
    check("cuMemcpy*Async_v2", op(stream))?;
    // SAFETY: a stream of the current context, lent to this load.
    check("cuStreamSynchronize", unsafe {
        sys::cuStreamSynchronize(stream)
    })
}
