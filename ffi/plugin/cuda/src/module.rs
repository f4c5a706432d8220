//! A loaded image: its `CUmodule`, its kernels, and the target table the
//! runtime gets, plus what LLVM's device runtime expects to find set up at
//! load (the device environment) and per kernel (its execution mode).

use crate::ctor_dtor::{self, DeviceFunctions, Phase};
use crate::device_info::DeviceInfo;
use crate::driver::{check, CudaError};
use crate::launch::{ExecMode, KernelLimits};
use crate::memory::{c_name, global, read_global, write_global};
use cudarc::driver::sys::{self, CUfunction, CUmodule, CUstream};
use omptarget_abi::{OffloadEntry, TargetTable};
use omptarget_plugin_kit::error::{PluginError, Result};
use std::ffi::{c_void, CStr};

/// Device environment global of clang 19/22's device runtime.
pub const DEVICE_ENV_19: &str = "__omp_rtl_device_environment";
/// Device environment global of clang 14's device runtime.
pub const DEVICE_ENV_14: &str = "omptarget_device_environment";

/// A kernel of a loaded module. Its address is the target table's entry
/// address, so launches find it (and are checked against it).
#[derive(Debug)]
pub struct Kernel {
    /// The driver's function.
    pub function: CUfunction,
    /// Mode and thread limit.
    pub limits: KernelLimits,
    /// What its implicit first argument needs (clang 19/22 kernels).
    pub launch_env: LaunchEnv,
    /// Its name, for messages.
    pub name: String,
}

/// The implicit first argument of clang 19/22 kernels (`dyn_ptr`, which
/// the OpenMP layer passes as a null placeholder): LLVM's plugins pass a
/// `KernelLaunchEnvironmentTy` there, which the device runtime reads for
/// cross-team reductions only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchEnv {
    /// A clang 14 kernel (no kernel environment): arguments as given.
    None,
    /// No reduction: LLVM passes the all-ones pointer.
    Unused,
    /// A teams reduction: a launch environment with a reduction buffer of
    /// `data_size * buffer_length` bytes, per launch.
    Reduction {
        /// `ReductionDataSize`.
        data_size: u32,
        /// `ReductionBufferLength`.
        buffer_length: u32,
    },
}

/// A module and what was built for it; freed by [`LoadedModule::unload`].
pub struct LoadedModule {
    /// The descriptor's address (`unload_binary` names images by it).
    pub key: usize,
    /// The driver's module.
    pub module: CUmodule,
    /// Boxed so their addresses stay put.
    pub kernels: Vec<Box<Kernel>>,
    /// The device entries the table points into.
    pub entries: Box<[OffloadEntry]>,
    /// The table given to the runtime.
    pub table: Box<TargetTable>,
    /// Its device destructors (`nvptx$device$fini`), run before the
    /// module is unloaded; found at load so a bad image fails there.
    pub fini: Option<DeviceFunctions>,
}

impl LoadedModule {
    /// Whether `entry` is one of this module's kernels; its copy if so.
    pub fn kernel(&self, entry: *mut c_void) -> Option<&Kernel> {
        self.kernels
            .iter()
            .map(|k| &**k)
            .find(|k| std::ptr::eq(*k as *const Kernel, entry as *const Kernel))
    }

    /// Run its device destructors on `stream`, then unload it (the context
    /// is current, no kernel of it still queued). The module is unloaded
    /// even when a destructor fails: the error says so.
    pub fn unload_after_dtors(self, stream: CUstream) -> Result<usize> {
        let dtors = match &self.fini {
            Some(fini) => fini.run(stream, self.module),
            None => Ok(0),
        };
        let unloaded = self.unload();
        match (dtors, unloaded) {
            (Ok(ran), Ok(())) => Ok(ran),
            (Err(e), Ok(())) => Err(PluginError::Backend(format!(
                "{e}; the module was unloaded"
            ))),
            (_, Err(e)) => Err(e.into()),
        }
    }

    /// `cuModuleUnload` (the context is current); no destructors run.
    pub fn unload(self) -> Result<(), CudaError> {
        // SAFETY: a module of this context, unloaded once (`self` is
        // consumed); its functions are not used afterwards (the runtime
        // drops the table at unload).
        check("cuModuleUnload", unsafe {
            sys::cuModuleUnload(self.module)
        })
    }
}

/// LLVM's `DeviceEnvironmentTy`: debug kind, number of devices, device
/// number, dynamic shared memory size (u32 each); clang 19/22's adds the
/// clock frequency, the indirect call table's address and size (left
/// zero: no indirect calls are registered) and the hardware parallelism
/// (u64 each, 48 bytes in all).
pub fn device_environment(
    size: usize,
    devices: usize,
    device: usize,
    info: &DeviceInfo,
) -> Vec<u8> {
    let mut env = vec![0u8; size];
    let debug = std::env::var("LIBOMPTARGET_DEVICE_RTL_DEBUG")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let fields = [
        debug,
        u32::try_from(devices).unwrap_or(u32::MAX),
        u32::try_from(device).unwrap_or(u32::MAX),
        dynamic_shared_memory(),
    ];
    for (i, v) in fields.iter().enumerate() {
        if let Some(slot) = env.get_mut(i * 4..i * 4 + 4) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
    }
    if let Some(slot) = env.get_mut(16..24) {
        slot.copy_from_slice(&(u64::from(info.clock_khz) * 1000).to_le_bytes());
    }
    // After the indirect call table (address and size, left empty):
    // `HardwareParallelism`, the warps the device runs at once, as LLVM's
    // CUDA plugin computes it.
    if let Some(slot) = env.get_mut(40..48) {
        let warps = u64::from(info.multiprocessors)
            * u64::from(info.threads_per_multiprocessor / info.limits.warp_size.max(1));
        slot.copy_from_slice(&warps.to_le_bytes());
    }
    env
}

/// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic shared memory per launch.
pub fn dynamic_shared_memory() -> u32 {
    std::env::var("LIBOMPTARGET_SHARED_MEMORY_SIZE")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Execution mode, thread limit and launch environment of `name`: from
/// the kernel environment (clang 19/22's `ConfigurationEnvironmentTy`:
/// `ExecMode` is byte 2, then the i32s `MinThreads`, `MaxThreads`,
/// `MinTeams`, `MaxTeams`, `ReductionDataSize`, `ReductionBufferLength`
/// from byte 4) or `<name>_exec_mode` (clang 14); generic if neither
/// exists in an OpenMP image, as LLVM; SPMD (the threads asked for) in an
/// image without the OpenMP device runtime.
fn kernel_limits(
    stream: CUstream,
    module: CUmodule,
    function: CUfunction,
    name: &str,
    openmp: bool,
) -> Result<(KernelLimits, LaunchEnv)> {
    let mut max = 0;
    // SAFETY: writable out-parameter, a function of a live module.
    check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(
            &mut max,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            function,
        )
    })?;
    let mut limits = KernelLimits {
        mode: if openmp {
            ExecMode::Generic
        } else {
            ExecMode::Spmd
        },
        max_threads: u32::try_from(max).unwrap_or(0).max(1),
    };
    let mut launch_env = LaunchEnv::None;
    let flags = if let Some((ptr, size)) = global(module, &format!("{name}_kernel_environment"))? {
        let mut env = [0u8; 28];
        if size < env.len() {
            return Err(PluginError::InvalidImage(format!(
                "{name}_kernel_environment has {size} bytes, fewer than a kernel environment's"
            )));
        }
        read_global(stream, ptr, &mut env)?;
        let field =
            |at: usize| i32::from_le_bytes([env[at], env[at + 1], env[at + 2], env[at + 3]]);
        if let Ok(m) = u32::try_from(field(8)) {
            if m > 0 {
                limits.max_threads = limits.max_threads.min(m);
            }
        }
        launch_env = match (u32::try_from(field(20)), u32::try_from(field(24))) {
            (Ok(data_size), Ok(buffer_length)) if data_size > 0 && buffer_length > 0 => {
                LaunchEnv::Reduction {
                    data_size,
                    buffer_length,
                }
            }
            _ => LaunchEnv::Unused,
        };
        Some(env[2])
    } else if let Some((ptr, size)) = global(module, &format!("{name}_exec_mode"))? {
        if size != 1 {
            return Err(PluginError::InvalidImage(format!(
                "{name}_exec_mode has {size} bytes, not 1"
            )));
        }
        let mut mode = [0u8];
        read_global(stream, ptr, &mut mode)?;
        Some(mode[0])
    } else {
        None
    };
    if let Some(flags) = flags {
        limits.mode = ExecMode::from_flags(flags).ok_or_else(|| {
            PluginError::InvalidImage(format!("kernel {name} has the unknown exec mode {flags}"))
        })?;
    }
    Ok((limits, launch_env))
}

/// Load `elf` into the current context and build its target table from
/// the host `entries`; the device environment is written first. Copies
/// run on `stream` (a stream of this context, lent for the load).
pub fn load(
    stream: CUstream,
    key: usize,
    elf: &[u8],
    entries: &[OffloadEntry],
    devices: usize,
    device: usize,
    info: &DeviceInfo,
) -> Result<LoadedModule> {
    let mut module = std::ptr::null_mut();
    // SAFETY: `elf` is a whole cubin (checked by `image::parse`), read
    // during the call only.
    check("cuModuleLoadData", unsafe {
        sys::cuModuleLoadData(&mut module, elf.as_ptr().cast())
    })
    .map_err(|e| PluginError::InvalidImage(e.to_string()))?;
    let mut loaded = LoadedModule {
        key,
        module,
        kernels: Vec::new(),
        entries: Box::new([]),
        table: Box::new(TargetTable {
            entries_begin: std::ptr::null_mut(),
            entries_end: std::ptr::null_mut(),
        }),
        fini: None,
    };
    // Constructors last, as LLVM's `loadBinary`: the device environment
    // and the kernels' modes are set up by then.
    let filled = fill(stream, &mut loaded, entries, devices, device, info).and_then(|()| {
        loaded.fini = ctor_dtor::functions(elf, Phase::Fini)?;
        match ctor_dtor::functions(elf, Phase::Init)? {
            Some(init) => init.run(stream, module).map(|_| ()),
            None => Ok(()),
        }
    });
    match filled {
        Ok(()) => Ok(loaded),
        Err(e) => {
            // Leave nothing behind on failure.
            let _ = loaded.unload();
            Err(e)
        }
    }
}

fn fill(
    stream: CUstream,
    loaded: &mut LoadedModule,
    entries: &[OffloadEntry],
    devices: usize,
    device: usize,
    info: &DeviceInfo,
) -> Result<()> {
    let module = loaded.module;
    // An image without a device environment has no OpenMP device runtime
    // (a plain CUDA kernel for the Rust API): its kernels run with exactly
    // the threads asked for, where OpenMP kernels without a mode are generic.
    let mut openmp = false;
    for name in [DEVICE_ENV_19, DEVICE_ENV_14] {
        if let Some((ptr, size)) = global(module, name)? {
            openmp = true;
            if size < 16 {
                return Err(PluginError::InvalidImage(format!(
                    "{name} has {size} bytes, fewer than a device environment's 16"
                )));
            }
            write_global(
                stream,
                ptr,
                &device_environment(size, devices, device, info),
            )?;
            break;
        }
    }
    let mut table: Vec<OffloadEntry> = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut out = *entry;
        if entry.name.is_null() {
            return Err(PluginError::InvalidImage(
                "an offload entry has no name".into(),
            ));
        }
        // SAFETY: entry names are NUL-terminated strings of the host
        // table, alive while the image is registered.
        let name = unsafe { CStr::from_ptr(entry.name) }
            .to_str()
            .map_err(|_| PluginError::InvalidImage("an entry name is not UTF-8".into()))?;
        if entry.size == 0 {
            let cname = c_name(name)?;
            let mut function = std::ptr::null_mut();
            // SAFETY: writable out-parameter, a live module, a C string.
            check("cuModuleGetFunction", unsafe {
                sys::cuModuleGetFunction(&mut function, module, cname.as_ptr())
            })
            .map_err(|e| PluginError::InvalidImage(format!("kernel {name}: {e}")))?;
            let (limits, launch_env) = kernel_limits(stream, module, function, name, openmp)?;
            let kernel = Box::new(Kernel {
                function,
                limits,
                launch_env,
                name: name.to_owned(),
            });
            out.addr = &*kernel as *const Kernel as *mut c_void;
            loaded.kernels.push(kernel);
        } else {
            let (ptr, size) = global(module, name)?.ok_or_else(|| {
                PluginError::InvalidImage(format!("the image has no global named {name}"))
            })?;
            if size != entry.size {
                return Err(PluginError::InvalidImage(format!(
                    "global {name} has {size} bytes on the device, {} on the host",
                    entry.size
                )));
            }
            out.addr = ptr as usize as *mut c_void;
        }
        table.push(out);
    }
    loaded.entries = table.into_boxed_slice();
    let range = loaded.entries.as_mut_ptr_range();
    *loaded.table = TargetTable {
        entries_begin: range.start,
        entries_end: range.end,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Sm;
    use crate::launch::Limits;

    fn h200() -> DeviceInfo {
        DeviceInfo {
            handle: 0,
            name: "test".into(),
            sm: Sm::from_number(90),
            limits: Limits {
                max_threads_per_block: 1024,
                max_blocks: i32::MAX as u32,
                warp_size: 32,
                default_teams: 128,
                default_threads: 128,
                teams_from_env: false,
            },
            multiprocessors: 132,
            threads_per_multiprocessor: 2048,
            clock_khz: 1_980_000,
            total_memory: 1 << 30,
        }
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn the_device_environment_of_clang_14_and_19() {
        // clang 14: 16 bytes, four u32.
        let env = device_environment(16, 3, 2, &h200());
        assert_eq!(env.len(), 16);
        assert_eq!((u32_at(&env, 4), u32_at(&env, 8)), (3, 2));
        // clang 19/22: 48 bytes with the clock and the hardware parallelism.
        let env = device_environment(48, 1, 0, &h200());
        assert_eq!((u32_at(&env, 4), u32_at(&env, 8)), (1, 0));
        assert_eq!(u64_at(&env, 16), 1_980_000_000);
        assert_eq!((u64_at(&env, 24), u64_at(&env, 32)), (0, 0));
        assert_eq!(u64_at(&env, 40), 132 * 64);
    }
}
