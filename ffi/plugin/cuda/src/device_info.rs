//! What the driver says of a GPU, read at plugin init before any context
//! exists (`is_valid_binary` needs the compute capability).

use crate::driver::{check, CudaError};
use crate::image::Sm;
use crate::launch::{Limits, DEFAULT_TEAMS, DEFAULT_THREADS};
use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute};

/// What the driver reports of a device; read at plugin init, before any
/// context exists (`is_valid_binary` needs the compute capability).
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// The driver's handle (`cuDeviceGet`).
    pub handle: CUdevice,
    /// `cuDeviceGetName`.
    pub name: String,
    /// Compute capability.
    pub sm: Sm,
    /// Launch limits and defaults.
    pub limits: Limits,
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    pub multiprocessors: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`.
    pub threads_per_multiprocessor: u32,
    /// `CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, kHz.
    pub clock_khz: u32,
    /// `cuDeviceTotalMem_v2`.
    pub total_memory: usize,
}

fn attribute(device: CUdevice, attr: CUdevice_attribute) -> Result<u32, CudaError> {
    let mut value = 0;
    // SAFETY: `value` is a writable int; the driver is open.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut value, attr, device)
    })?;
    Ok(u32::try_from(value).unwrap_or(0))
}

/// A positive number from the environment variable `name`.
fn env_count(name: &str) -> Option<u32> {
    std::env::var(name)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

impl DeviceInfo {
    /// Query device `ordinal`.
    pub fn query(ordinal: usize) -> Result<Self, CudaError> {
        use CUdevice_attribute::*;
        let mut handle = 0;
        let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
        // SAFETY: `handle` is writable; the driver is open.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut handle, ordinal)
        })?;
        let mut raw = [0 as std::ffi::c_char; 256];
        // SAFETY: `raw` holds 256 writable chars; the driver writes a
        // NUL-terminated name of at most that many.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(raw.as_mut_ptr(), raw.len() as i32, handle)
        })?;
        let bytes: Vec<u8> = raw
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        let mut total_memory = 0;
        // SAFETY: `total_memory` is writable.
        check("cuDeviceTotalMem_v2", unsafe {
            sys::cuDeviceTotalMem_v2(&mut total_memory, handle)
        })?;
        let default_teams = env_count("OMP_NUM_TEAMS");
        let max_blocks = attribute(handle, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?;
        let max_threads_per_block = attribute(handle, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?
            .min(attribute(handle, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?);
        Ok(Self {
            handle,
            name: String::from_utf8_lossy(&bytes).into_owned(),
            sm: Sm {
                major: attribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                minor: attribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            },
            limits: Limits {
                max_threads_per_block,
                max_blocks,
                warp_size: attribute(handle, CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
                default_teams: default_teams.unwrap_or(DEFAULT_TEAMS).min(max_blocks),
                default_threads: env_count("OMP_TEAMS_THREAD_LIMIT")
                    .unwrap_or(DEFAULT_THREADS)
                    .min(max_threads_per_block),
                teams_from_env: default_teams.is_some(),
            },
            multiprocessors: attribute(handle, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            threads_per_multiprocessor: attribute(
                handle,
                CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            clock_khz: attribute(handle, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            total_memory,
        })
    }
}
