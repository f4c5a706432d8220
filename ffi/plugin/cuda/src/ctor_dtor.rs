//! Device global constructors and destructors of an nvptx image, run as
//! LLVM's CUDA plugin runs them (plugins-nextgen's
//! `callGlobalCtorDtorCommon`).
//!
//! The nvptx backend has no `.init_array`: LLVM's `nvptx-lower-ctor-dtor`
//! pass gives each constructor (destructor) a global
//! `__init_array_object_<fn>_<id>_<priority>` (`__fini_array_object_…`)
//! holding the function's address, and a kernel `nvptx$device$init`
//! (`nvptx$device$fini`) that calls every pointer between the globals
//! `__init_array_start` and `__init_array_end` (destructors in reverse).
//! The plugin builds that array: it reads the object globals, sorted by
//! priority, into a device buffer, points the start and end globals at
//! it, runs the kernel on one thread, waits, and frees the buffer.
//!
//! Constructors run at the end of `load_binary` (the device environment is
//! written by then); destructors at `unload_binary`, or at
//! `deinit_device` for an image still loaded then (LLVM's `deinit` unloads
//! every image too), before the module is unloaded.

use crate::driver::{check, CudaError};
use crate::memory::{alloc, free};
use crate::memory::{global, read_global, write_global};
use cudarc::driver::sys::{self, CUmodule, CUstream};
use omptarget_abi::AllocKind;
use omptarget_plugin_kit::error::{PluginError, Result};
use std::ffi::CString;

/// Constructors (at load) or destructors (at unload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `nvptx$device$init` over `__init_array_object_*`.
    Init,
    /// `nvptx$device$fini` over `__fini_array_object_*`.
    Fini,
}

impl Phase {
    /// The kernel the lowering pass made.
    pub fn kernel(self) -> &'static str {
        match self {
            Phase::Init => "nvptx$device$init",
            Phase::Fini => "nvptx$device$fini",
        }
    }

    fn object_prefix(self) -> &'static str {
        match self {
            Phase::Init => "__init_array_object_",
            Phase::Fini => "__fini_array_object_",
        }
    }

    fn bounds(self) -> (&'static str, &'static str) {
        match self {
            Phase::Init => ("__init_array_start", "__init_array_end"),
            Phase::Fini => ("__fini_array_start", "__fini_array_end"),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Phase::Init => "constructors",
            Phase::Fini => "destructors",
        }
    }
}

/// The functions of one phase of an image: the names of their pointer
/// globals, in the order the array gets them (ascending priority; equal
/// priorities in symbol-table order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFunctions {
    /// Constructors or destructors.
    pub phase: Phase,
    /// The pointer globals.
    pub globals: Vec<CString>,
}

/// What `elf` (a cubin) has for `phase`: `None` without the phase's
/// kernel (nothing to run, as LLVM's `isSymbolInImage` check), an error for
/// an object global whose name ends in no priority (LLVM refuses it too).
pub fn functions(elf: &[u8], phase: Phase) -> Result<Option<DeviceFunctions>> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(elf)
        .map_err(|e| PluginError::InvalidImage(format!("cannot read the cubin's symbols: {e}")))?;
    let mut has_kernel = false;
    let mut found: Vec<(u16, CString)> = Vec::new();
    for symbol in file.symbols() {
        let Ok(name) = symbol.name() else { continue };
        if name == phase.kernel() {
            has_kernel = true;
        } else if name.starts_with(phase.object_prefix()) {
            let priority = name
                .rsplit('_')
                .next()
                .and_then(|p| p.parse::<u16>().ok())
                .ok_or_else(|| {
                    PluginError::InvalidImage(format!(
                        "{name}: invalid priority for a device constructor or destructor"
                    ))
                })?;
            let cname = CString::new(name)
                .map_err(|_| PluginError::InvalidImage(format!("symbol {name:?} has a NUL")))?;
            found.push((priority, cname));
        }
    }
    if !has_kernel {
        return Ok(None);
    }
    // Stable: equal priorities keep the symbol table's order.
    found.sort_by_key(|(priority, _)| *priority);
    Ok(Some(DeviceFunctions {
        phase,
        globals: found.into_iter().map(|(_, name)| name).collect(),
    }))
}

impl DeviceFunctions {
    /// Run them on `stream` (of the current context) and wait; the number
    /// run. The temporary array is freed on every path.
    pub fn run(&self, stream: CUstream, module: CUmodule) -> Result<usize> {
        let phase = self.phase;
        let fail = |e: PluginError| {
            PluginError::Backend(format!("device {} ({}): {e}", phase.what(), phase.kernel()))
        };
        if self.globals.is_empty() {
            return Ok(0);
        }
        let mut pointers = Vec::with_capacity(self.globals.len() * 8);
        for name in &self.globals {
            let name = name.to_str().unwrap_or_default();
            let (ptr, size) = global(module, name)?
                .ok_or_else(|| fail(PluginError::InvalidImage(format!("no global {name}"))))?;
            if size != 8 {
                return Err(fail(PluginError::InvalidImage(format!(
                    "{name} has {size} bytes, not a pointer's 8"
                ))));
            }
            let mut value = [0u8; 8];
            read_global(stream, ptr, &mut value).map_err(|e| fail(e.into()))?;
            pointers.extend_from_slice(&value);
        }
        let array = alloc(pointers.len(), AllocKind::Device).map_err(|e| fail(e.into()))?;
        let result = self.launch(stream, module, array as u64, &pointers);
        let freed = free(array, AllocKind::Device);
        result.map_err(fail)?;
        freed.map_err(|e| fail(e.into()))?;
        Ok(self.globals.len())
    }

    fn launch(
        &self,
        stream: CUstream,
        module: CUmodule,
        array: u64,
        pointers: &[u8],
    ) -> Result<()> {
        let (start, end) = self.phase.bounds();
        write_global(stream, array, pointers)?;
        for (name, value) in [(start, array), (end, array + pointers.len() as u64)] {
            let (ptr, size) = global(module, name)?
                .ok_or_else(|| PluginError::InvalidImage(format!("no global {name}")))?;
            if size != 8 {
                return Err(PluginError::InvalidImage(format!(
                    "{name} has {size} bytes, not a pointer's 8"
                )));
            }
            write_global(stream, ptr, &value.to_le_bytes())?;
        }
        let kernel = CString::new(self.phase.kernel()).unwrap_or_default();
        let mut function = std::ptr::null_mut();
        // SAFETY: writable out-parameter, a live module, a C string.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut function, module, kernel.as_ptr())
        })?;
        // One thread, no arguments: the kernel walks the array itself.
        // SAFETY: a function of a live module on a stream of its context;
        // the kernel takes no parameters.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        })?;
        // SAFETY: a stream of the current context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(stream)
        })
        .map_err(|e: CudaError| e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omptarget_test_support::cuda::{cubin, cubin_with_ctors_and_dtors, Sym};

    fn names(f: &DeviceFunctions) -> Vec<&str> {
        f.globals.iter().map(|n| n.to_str().unwrap()).collect()
    }

    #[test]
    fn functions_are_ordered_by_priority_then_symbol_order() {
        let elf = cubin_with_ctors_and_dtors(true);
        let init = functions(&elf, Phase::Init).unwrap().unwrap();
        assert_eq!(
            names(&init),
            [
                "__init_array_object_a_x1_101",
                "__init_array_object_c_x2_101",
                "__init_array_object_b_x1_65535"
            ]
        );
        let fini = functions(&elf, Phase::Fini).unwrap().unwrap();
        assert_eq!(
            names(&fini),
            [
                "__fini_array_object_d_x1_100",
                "__fini_array_object_e_x1_65535"
            ]
        );
    }

    #[test]
    fn without_the_kernel_nothing_runs_and_a_bad_priority_is_refused() {
        let p = &[0u8; 8];
        let no_kernel = cubin(90, &[Sym::Object("__init_array_object_a_1_101", p)]);
        assert_eq!(functions(&no_kernel, Phase::Init).unwrap(), None);
        let bad = cubin(
            90,
            &[
                Sym::Function("nvptx$device$init"),
                Sym::Object("__init_array_object_a_1_high", p),
            ],
        );
        let err = functions(&bad, Phase::Init).unwrap_err().to_string();
        assert!(
            err.contains("__init_array_object_a_1_high: invalid priority"),
            "{err}"
        );
        assert!(functions(b"junk", Phase::Fini).is_err());
    }
}
