//! The CUDA driver, through cudarc's raw layer (`cudarc::driver::sys`),
//! which loads `libcuda` at run time.
//!
//! cudarc panics when the library is missing and when a symbol it is
//! asked for is missing, so [`open`] checks both first: no library, a
//! missing symbol or a failing `cuInit` become a reason for 0 devices,
//! never a panic. After that, every call goes through [`check`], which
//! turns a `CUresult` into an error naming the call.

use cudarc::driver::sys::{self, CUresult};
use omptarget_plugin_kit::PluginError;
use std::fmt;

/// Every driver function this plugin calls: checked present before the
/// first call (cudarc resolves each one lazily, and panics on a missing one).
pub const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuMemGetInfo_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocHost_v2",
    "cuMemFreeHost",
    "cuMemAllocManaged",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemcpyPeerAsync",
    "cuStreamCreate",
    "cuStreamSynchronize",
    "cuStreamDestroy_v2",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuStreamWaitEvent",
    "cuEventSynchronize",
    "cuEventDestroy_v2",
    "cuEventElapsedTime",
];

/// A failed driver call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaError {
    /// The driver function.
    pub call: &'static str,
    /// What it returned.
    pub code: CUresult,
}

impl CudaError {
    /// The driver has shut down (`CUDA_ERROR_DEINITIALIZED`): everything
    /// it held is gone with it, so nothing more can or need be released.
    pub fn is_deinitialized(&self) -> bool {
        self.code == CUresult::CUDA_ERROR_DEINITIALIZED
    }

    /// `cuMemAlloc` found no room.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == CUresult::CUDA_ERROR_OUT_OF_MEMORY
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The enum's name, not cuGetErrorName: formatting must work when
        // the driver is gone.
        write!(
            f,
            "{} failed: {:?} ({})",
            self.call, self.code, self.code as u32
        )
    }
}

impl From<CudaError> for PluginError {
    fn from(e: CudaError) -> Self {
        PluginError::Backend(e.to_string())
    }
}

/// `Ok` for `CUDA_SUCCESS`, else the error naming `call`.
pub fn check(call: &'static str, code: CUresult) -> Result<(), CudaError> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaError { call, code })
    }
}

/// Why the plugin has no devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// No `libcuda.so`/`libcuda.so.1` could be loaded: not an error.
    NoLibrary,
    /// The library lacks a function this plugin needs.
    MissingSymbol(&'static str, String),
    /// `cuInit` or `cuDeviceGetCount` failed.
    Failed(CudaError),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoLibrary => f.write_str("no CUDA driver (libcuda.so.1) found: 0 devices"),
            Self::MissingSymbol(name, why) => {
                write!(f, "the CUDA driver lacks {name} ({why}): 0 devices")
            }
            Self::Failed(e) => write!(f, "the CUDA driver is unusable, {e}: 0 devices"),
        }
    }
}

/// The driver's names on Linux: its SONAME, then the development link
/// (the one name LLVM's plugin opens).
const DRIVER_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// The driver opened under one of [`DRIVER_NAMES`], or `None`.
///
/// Asked before cudarc's loader, which tries 34 names of every platform and
/// packaging, each a search of every library folder: without a driver that
/// was ~470 failed `openat` calls, 2 ms of a short process's start
/// (BENCHMARKS.md, `one_region_process_wall_ms`).
fn probe_driver() -> Option<libloading::Library> {
    DRIVER_NAMES.iter().find_map(|name| {
        // SAFETY: loading the driver runs only its initialisers; the handle
        // is kept until cudarc holds its own (see `open`).
        unsafe { libloading::Library::new(name) }.ok()
    })
}

/// Load the driver, check every symbol this plugin calls, `cuInit` it and
/// count its devices.
pub fn open() -> Result<usize, Unavailable> {
    let Some(probe) = probe_driver() else {
        return Err(Unavailable::NoLibrary);
    };
    // SAFETY: the driver is loaded (the probe holds it), so cudarc's loader
    // finds it under one of its names and does not panic; the library stays
    // loaded for the process (cudarc keeps its handle in a static).
    let lib = unsafe { sys::culib() };
    // cudarc's handle keeps the driver loaded: the probe's can go.
    drop(probe);
    for name in REQUIRED_SYMBOLS {
        // SAFETY: only the symbol's presence is checked; the pointer is
        // dropped unused.
        if let Err(e) = unsafe { lib.get::<*const std::ffi::c_void>(name.as_bytes()) } {
            return Err(Unavailable::MissingSymbol(name, e.to_string()));
        }
    }
    // SAFETY: every symbol used below is present (checked above).
    check("cuInit", unsafe { sys::cuInit(0) }).map_err(Unavailable::Failed)?;
    let mut count = 0;
    // SAFETY: `count` is a writable int.
    check("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })
    .map_err(Unavailable::Failed)?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// `cuDriverGetVersion`, e.g. 12080; 0 if it fails.
pub fn version() -> i32 {
    let mut v = 0;
    // SAFETY: the driver is open (callers run after `open`); `v` is writable.
    let _ = unsafe { sys::cuDriverGetVersion(&mut v) };
    v
}
