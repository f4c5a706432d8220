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
/// numbered after the local ones), loaded only in a process of an MPI job
/// that may hold device servers. Whether it is one is written once, in the
/// MPI layer (`omptarget_mpi_wire::mpi::job_may_have_servers`), which the
/// plugin asks too; this module reads no launcher's environment. Asking
/// before the plugin is opened keeps every other process from loading it:
/// opened only to decline, it cost ~0.4 MB of a one-region process's peak
/// RSS.
pub const MPI_PLUGIN_NAME: &str = "libomptarget.rtl.mpi.so";

/// The MPI plugin next to the runtime, when this process is part of an MPI
/// job and the plugin is there: a program rank must join the job even when
/// it offloads nothing (with offloading disabled, LLVM 14 loads no plugin),
/// or the device servers would wait for it for ever.
pub fn mpi_plugin_of_this_job() -> Option<PathBuf> {
    if !omptarget_mpi_wire::mpi::job_may_have_servers() {
        return None;
    }
    let path = runtime_library_dir().ok()?.join(MPI_PLUGIN_NAME);
    path.is_file().then_some(path)
}

/// The default plugins present in `dir`, in LLVM's order, then the MPI
/// plugin when this process is part of an MPI job.
pub fn default_plugins_in(dir: &Path) -> Vec<PathBuf> {
    default_plugins_of(dir, omptarget_mpi_wire::mpi::job_may_have_servers())
}

/// [`default_plugins_in`], `in_mpi_job` given.
fn default_plugins_of(dir: &Path, in_mpi_job: bool) -> Vec<PathBuf> {
    DEFAULT_PLUGIN_NAMES
        .iter()
        .copied()
        .chain(in_mpi_job.then_some(MPI_PLUGIN_NAME))
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
        let names = |in_mpi_job| -> Vec<String> {
            default_plugins_of(dir.path(), in_mpi_job)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(false),
            ["libomptarget.rtl.x86_64.so", "libomptarget.rtl.cuda.so"]
        );
        // In an MPI job, the MPI plugin last.
        assert_eq!(
            names(true),
            [
                "libomptarget.rtl.x86_64.so",
                "libomptarget.rtl.cuda.so",
                MPI_PLUGIN_NAME
            ]
        );
    }
}
