//! `olGetDeviceInfo` and `olGetPlatformInfo`: what a device and a platform
//! are, answered as LLVM 22's liboffload answers (its enum values, its
//! fixed answers for a host device, `OL_ERRC_UNIMPLEMENTED` where the
//! plugin does not say).

use super::context::{backend, Context, Handle, Target};
use super::errors::{ol_error, Errc, Outcome};
use super::info::InfoOut;
use super::items::MAX_GROUP_ITEMS;
use omptarget::{DeviceKind, Runtime};
use std::ffi::c_void;

/// `OL_DEVICE_INFO_UID`, which the caller answers from the OpenMP layer.
pub(crate) const UID: u32 = key::UID;

/// `ol_device_info_t` values.
mod key {
    pub const TYPE: u32 = 0;
    pub const PLATFORM: u32 = 1;
    pub const NAME: u32 = 2;
    pub const PRODUCT_NAME: u32 = 3;
    pub const UID: u32 = 4;
    pub const VENDOR: u32 = 5;
    pub const DRIVER_VERSION: u32 = 6;
    pub const MAX_WORK_GROUP_SIZE: u32 = 7;
    pub const MAX_WORK_GROUP_SIZE_PER_DIMENSION: u32 = 8;
    pub const MAX_WORK_SIZE: u32 = 9;
    pub const MAX_WORK_SIZE_PER_DIMENSION: u32 = 10;
    pub const VENDOR_ID: u32 = 11;
    pub const NUM_COMPUTE_UNITS: u32 = 12;
    pub const MAX_CLOCK_FREQUENCY: u32 = 13;
    pub const MEMORY_CLOCK_RATE: u32 = 14;
    pub const ADDRESS_BITS: u32 = 15;
    pub const MAX_MEM_ALLOC_SIZE: u32 = 16;
    pub const GLOBAL_MEM_SIZE: u32 = 17;
    pub const WORK_GROUP_LOCAL_MEM_SIZE: u32 = 18;
    pub const SINGLE_FP_CONFIG: u32 = 19;
    pub const DOUBLE_FP_CONFIG: u32 = 20;
    pub const HALF_FP_CONFIG: u32 = 21;
    pub const NATIVE_VECTOR_WIDTH_CHAR: u32 = 22;
    pub const NATIVE_VECTOR_WIDTH_DOUBLE: u32 = 27;
    pub const NATIVE_VECTOR_WIDTH_HALF: u32 = 28;
    pub const LAST: u32 = 29;
}

/// `ol_device_type_t` values.
mod device_type {
    pub const GPU: u32 = 2;
    pub const CPU: u32 = 3;
    pub const HOST: u32 = 4;
}

/// `ol_platform_info_t` values.
mod platform_key {
    pub const NAME: u32 = 0;
    pub const VENDOR_NAME: u32 = 1;
    pub const VERSION: u32 = 2;
    pub const BACKEND: u32 = 3;
}

/// `ol_dimensions_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dimensions {
    x: u32,
    y: u32,
    z: u32,
}

/// The floating-point capabilities LLVM 22 reports for single and double
/// precision on every device (`ol_device_fp_capability_flag_t`: correctly
/// rounded divide and sqrt, the three rounding modes, inf/NaN, denormals,
/// FMA).
const FP_FLAGS: u32 = 1 | 2 | 4 | 8 | 16 | 32 | 64;

/// This library's version, as the host device's driver version.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `olGetDeviceInfo[Size]` of the device `target` (of the platform
/// `platform`) for `key`, written to `out`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
pub(crate) unsafe fn device_info(
    runtime: Option<&Runtime>,
    target: Target,
    platform: Handle,
    uid: Option<&str>,
    key: u32,
    out: &InfoOut,
) -> Outcome {
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        // The answers that are the same for every device.
        match key {
            key::PLATFORM => return out.write(platform as *const c_void),
            key::SINGLE_FP_CONFIG | key::DOUBLE_FP_CONFIG => return out.write(FP_FLAGS),
            key::HALF_FP_CONFIG => return out.write(0u32),
            key::NATIVE_VECTOR_WIDTH_CHAR..=key::NATIVE_VECTOR_WIDTH_DOUBLE => {
                return out.write(1u32)
            }
            key::NATIVE_VECTOR_WIDTH_HALF => return out.write(0u32),
            key::ADDRESS_BITS => return out.write(usize::BITS),
            key::LAST.. => {
                return Err(ol_error!(
                    Errc::InvalidEnumeration,
                    "not an ol_device_info_t value"
                ))
            }
            _ => {}
        }
        match target {
            Target::Host => host_device_info(key, out),
            Target::Runtime(id) => {
                let device = runtime.and_then(|r| r.device(id).ok()).ok_or(ol_error!(
                    Errc::InvalidDevice,
                    "the device is gone (the runtime was shut down)"
                ))?;
                // Known without asking the plugin.
                if key == key::UID {
                    return out.string(
                        uid.ok_or(ol_error!(Errc::Unimplemented, "the device has no UID"))?,
                    );
                }
                let properties = device.properties().map_err(|e| {
                    tracing::debug!(error = %e, "olGetDeviceInfo: the device's properties");
                    ol_error!(
                        Errc::BackendFailure,
                        "the device's plugin could not say (see the debug output)"
                    )
                })?;
                let not_reported = ol_error!(
                    Errc::Unimplemented,
                    "the device's plugin does not report this property"
                );
                let as_u32 = |v: Option<u64>| {
                    v.map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                        .ok_or(not_reported)
                };
                let local_cpu =
                    properties.kind == Some(DeviceKind::HostCpu) && properties.location.is_none();
                match key {
                    key::MAX_WORK_GROUP_SIZE
                    | key::MAX_WORK_GROUP_SIZE_PER_DIMENSION
                    | key::MAX_WORK_SIZE
                    | key::MAX_WORK_SIZE_PER_DIMENSION
                        if local_cpu =>
                    {
                        local_cpu_info(key, out).unwrap_or(Err(not_reported))
                    }
                    key::TYPE => out.write(match properties.kind {
                        Some(DeviceKind::CudaGpu) => device_type::GPU,
                        _ => device_type::CPU,
                    }),
                    key::NAME | key::PRODUCT_NAME => {
                        out.string(properties.name.as_deref().ok_or(not_reported)?)
                    }
                    key::MAX_WORK_GROUP_SIZE => out.write(as_u32(properties.max_threads)?),
                    key::MAX_WORK_SIZE => {
                        let teams = properties.max_teams.ok_or(not_reported)?;
                        let threads = properties.max_threads.ok_or(not_reported)?;
                        out.write(as_u32(Some(teams.saturating_mul(threads)))?)
                    }
                    key::MAX_MEM_ALLOC_SIZE | key::GLOBAL_MEM_SIZE => {
                        out.write(properties.total_memory.ok_or(not_reported)?)
                    }
                    _ if local_cpu => local_cpu_info(key, out).unwrap_or(Err(not_reported)),
                    _ => Err(not_reported),
                }
            }
        }
    }
}

/// A property of a host CPU device of this process that its plugin does
/// not report, read from the machine, where there is one: the CPU's
/// vendor (its PCI vendor number for AMD and Intel), its highest clock,
/// this library's version as the driver's; the shape of a launch (see
/// `items`). `None` for the properties a CPU
/// has no value for (a GPU's local memory and memory clock).
///
/// # Safety
/// As [`device_info`].
unsafe fn local_cpu_info(key: u32, out: &InfoOut) -> Option<Outcome> {
    let vendor = || cpu_info("vendor_id");
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        Some(match key {
            key::VENDOR => out.string(&vendor()?),
            key::VENDOR_ID => out.write(match vendor()?.as_str() {
                "AuthenticAMD" => 0x1022u32,
                "GenuineIntel" => 0x8086u32,
                _ => return None,
            }),
            key::DRIVER_VERSION => out.string(VERSION),
            key::NUM_COMPUTE_UNITS => out.write(1u32),
            key::MAX_CLOCK_FREQUENCY => out.write(cpu_mhz()?),
            // A launch's shape (`items`): groups of up to MAX_GROUP_ITEMS
            // items, each dimension of either up to a u32's range.
            key::MAX_WORK_GROUP_SIZE => out.write(MAX_GROUP_ITEMS),
            key::MAX_WORK_GROUP_SIZE_PER_DIMENSION => out.write(Dimensions {
                x: MAX_GROUP_ITEMS,
                y: MAX_GROUP_ITEMS,
                z: MAX_GROUP_ITEMS,
            }),
            key::MAX_WORK_SIZE => out.write(u32::MAX),
            key::MAX_WORK_SIZE_PER_DIMENSION => out.write(Dimensions {
                x: u32::MAX,
                y: u32::MAX,
                z: u32::MAX,
            }),
            _ => return None,
        })
    }
}

/// The first value of `field` in `/proc/cpuinfo`.
fn cpu_info(field: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name.trim() == field).then(|| value.trim().to_owned())
    })
}

/// The CPU's highest clock in MHz: cpufreq's maximum, else the current
/// clock `/proc/cpuinfo` gives (a VM has no cpufreq).
fn cpu_mhz() -> Option<u32> {
    let khz = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    match khz {
        Some(khz) => u32::try_from(khz / 1000).ok(),
        None => {
            let mhz: f64 = cpu_info("cpu MHz")?.parse().ok()?;
            // A clock of a few GHz fits a u32 of MHz.
            Some(mhz.round() as u32)
        }
    }
    .filter(|&mhz| mhz > 0)
}

/// The host device's answers: LLVM 22's for its host device, with this
/// library's name and version.
///
/// # Safety
/// As [`device_info`].
unsafe fn host_device_info(key: u32, out: &InfoOut) -> Outcome {
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match key {
            key::TYPE => out.write(device_type::HOST),
            key::NAME | key::PRODUCT_NAME => out.string("Host (the initial device)"),
            key::UID => out.string("HOST"),
            key::VENDOR => out.string("omptarget-rs"),
            key::DRIVER_VERSION => out.string(VERSION),
            key::MAX_WORK_GROUP_SIZE | key::NUM_COMPUTE_UNITS => out.write(1u32),
            key::MAX_WORK_GROUP_SIZE_PER_DIMENSION => out.write(Dimensions { x: 1, y: 1, z: 1 }),
            key::MAX_WORK_SIZE => out.write(u32::MAX),
            key::MAX_WORK_SIZE_PER_DIMENSION => out.write(Dimensions {
                x: u32::MAX,
                y: u32::MAX,
                z: u32::MAX,
            }),
            key::VENDOR_ID => out.write(0u32),
            key::MAX_CLOCK_FREQUENCY | key::MEMORY_CLOCK_RATE => out.write(usize::BITS),
            key::MAX_MEM_ALLOC_SIZE | key::GLOBAL_MEM_SIZE | key::WORK_GROUP_LOCAL_MEM_SIZE => {
                out.write(0u64)
            }
            _ => Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_device_info_t value"
            )),
        }
    }
}

/// `olGetPlatformInfo[Size]` of `handle` for `key`, written to `out`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
pub(crate) unsafe fn platform_info(
    context: &Context,
    handle: Handle,
    key: u32,
    out: &InfoOut,
) -> Outcome {
    let platform = context.platform(handle)?;
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match key {
            platform_key::NAME => out.string(&platform.name),
            platform_key::VENDOR_NAME => out.string(if platform.backend == backend::CUDA {
                "NVIDIA Corporation"
            } else {
                "omptarget-rs"
            }),
            // The API version the header declares (OL_VERSION_*), as LLVM
            // formats it.
            platform_key::VERSION => out.string("v0.0.1"),
            platform_key::BACKEND => out.write(platform.backend),
            _ => Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_platform_info_t value"
            )),
        }
    }
}
