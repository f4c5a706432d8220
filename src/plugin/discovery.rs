//! Where the default plugins are: next to the runtime's own library, under
//! LLVM 14's names, in LLVM 14's order.
use crate::{Error, Result};
use std::ffi::{c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The file name of the x86_64 host plugin (which the built-in host plugin
/// replaces).
pub const HOST_PLUGIN_NAME: &str = "libomptarget.rtl.x86_64.so";

/// LLVM 14's plugin names, in the order its `rtl.cpp` tries them.
pub const DEFAULT_PLUGIN_NAMES: [&str; 7] = [
    "libomptarget.rtl.ppc64.so",
    "libomptarget.rtl.x86_64.so",
    "libomptarget.rtl.cuda.so",
    "libomptarget.rtl.aarch64.so",
    "libomptarget.rtl.ve.so",
    "libomptarget.rtl.amdgpu.so",
    "libomptarget.rtl.rpc.so",
];

/// The directory of the object (shared library or executable) this code is
/// linked into, found with `dladdr` on one of its functions.
pub fn runtime_library_dir() -> Result<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let addr = runtime_library_dir as *const c_void;
    // SAFETY: dladdr only reads `addr` and writes `info`.
    let found = unsafe { libc::dladdr(addr, info.as_mut_ptr()) };
    // SAFETY: zero-initialised, and filled in by dladdr when it succeeds.
    let info = unsafe { info.assume_init() };
    if found == 0 || info.dli_fname.is_null() {
        return Err(Error::PluginDirectory(
            "dladdr found no object containing the runtime".into(),
        ));
    }
    // SAFETY: dladdr returns a NUL-terminated string owned by the loader.
    let file = unsafe { CStr::from_ptr(info.dli_fname) };
    let file = Path::new(std::ffi::OsStr::from_bytes(file.to_bytes()));
    // For the main program the loader may report a bare or relative name.
    let file = match file.canonicalize() {
        Ok(path) => path,
        Err(_) => std::env::current_exe()
            .map_err(|e| Error::PluginDirectory(format!("{}: {e}", file.display())))?,
    };
    file.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::PluginDirectory(format!("{} has no parent", file.display())))
}

/// The MPI plugin (remote devices), after LLVM's list (remote devices are
/// numbered after the local ones). Like every default plugin it is loaded
/// when present, and it alone decides whether this process is part of an
/// MPI job with device servers (`omptarget_mpi_wire::mpi::job_may_have_servers`):
/// outside one it opens no MPI library and has no devices, so the runtime
/// leaves it out of the device numbering, as LLVM leaves out a CUDA plugin
/// on a machine without a GPU.
pub const MPI_PLUGIN_NAME: &str = "libomptarget.rtl.mpi.so";

/// The MPI plugin next to the runtime, if it is there: a program rank must
/// join its MPI job even when it offloads nothing (with offloading
/// disabled, LLVM 14 loads no plugin), or the device servers would wait
/// for it for ever; outside a job the plugin does nothing.
pub fn mpi_plugin_next_to_runtime() -> Option<PathBuf> {
    let path = runtime_library_dir().ok()?.join(MPI_PLUGIN_NAME);
    path.is_file().then_some(path)
}

/// The default plugins present in `dir`, in LLVM's order, then the MPI
/// plugin.
pub fn default_plugins_in(dir: &Path) -> Vec<PathBuf> {
    DEFAULT_PLUGIN_NAMES
        .iter()
        .copied()
        .chain([MPI_PLUGIN_NAME])
        .map(|name| dir.join(name))
        .filter(|path| {
            let present = path.is_file();
            if !present {
                tracing::trace!(path = %path.display(), "default plugin not present");
            }
            present
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_directory_holds_this_test_binary() {
        let dir = runtime_library_dir().unwrap();
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert_eq!(dir, exe.parent().unwrap());
    }

    #[test]
    fn only_present_plugins_in_llvm_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            MPI_PLUGIN_NAME,
            "libomptarget.rtl.cuda.so",
            "libomptarget.rtl.x86_64.so",
            "other.so",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = default_plugins_in(dir.path());
        let names: Vec<_> = found
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        // The MPI plugin last, whatever the environment: whether this is
        // an MPI job is the plugin's to decide.
        assert_eq!(
            names,
            [
                "libomptarget.rtl.x86_64.so",
                "libomptarget.rtl.cuda.so",
                MPI_PLUGIN_NAME
            ]
        );
    }
}
