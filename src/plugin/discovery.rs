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

/// The MPI plugin (remote devices): a default plugin only in a process an
/// MPI launcher started, after LLVM's list (remote devices are numbered
/// after the local ones).
pub const MPI_PLUGIN_NAME: &str = "libomptarget.rtl.mpi.so";

/// Whether this process is part of an MPI job that may hold device
/// servers: an Open MPI job of several application contexts (`mpirun -np
/// 1 ./app : -np N omptarget-mpi-device`), or `OMPTARGET_MPI=1` (MPICH's
/// Hydra sets no variable that tells a job's contexts apart, so its jobs
/// need it: `omptarget run --mpi` sets it); never
/// with `OMPTARGET_MPI_DISABLE`. A plain MPI job (one context) is not: its
/// program starts MPI itself. The MPI plugin applies the same rule
/// (`omptarget_plugin_mpi::mpi::job_may_have_servers`).
pub fn launched_by_mpi() -> bool {
    if std::env::var_os("OMPTARGET_MPI_DISABLE").is_some() {
        return false;
    }
    if std::env::var("OMPTARGET_MPI").is_ok_and(|v| v == "1") {
        return true;
    }
    std::env::var("OMPI_NUM_APP_CTX")
        .ok()
        .and_then(|n| n.trim().parse::<u32>().ok())
        .is_some_and(|n| n > 1)
}

/// The MPI plugin next to the runtime, when this process is part of an MPI
/// job and the plugin is there: a program rank must join the job even when
/// it offloads nothing (with offloading disabled, LLVM 14 loads no plugin),
/// or the device servers would wait for it for ever.
pub fn mpi_plugin_of_this_job() -> Option<PathBuf> {
    if !launched_by_mpi() {
        return None;
    }
    let path = runtime_library_dir().ok()?.join(MPI_PLUGIN_NAME);
    path.is_file().then_some(path)
}

/// The default plugins present in `dir`, in LLVM's order, then the MPI
/// plugin when this process is part of an MPI job.
pub fn default_plugins_in(dir: &Path) -> Vec<PathBuf> {
    let mpi = launched_by_mpi().then_some(MPI_PLUGIN_NAME);
    DEFAULT_PLUGIN_NAMES
        .iter()
        .copied()
        .chain(mpi)
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
        assert_eq!(
            names,
            ["libomptarget.rtl.x86_64.so", "libomptarget.rtl.cuda.so"]
        );
    }
}
