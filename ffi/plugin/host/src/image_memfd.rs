//! Loading an image from memory: an anonymous file (`memfd_create`)
//! dlopened through `/proc/self/fd/N`, so no directory is needed (an unset,
//! missing or read-only `TMPDIR` does not matter) and nothing can be left
//! on disk.
//!
//! Each memfd is a new inode, so every load is a separate copy of the
//! image (devices do not share globals). The fd is closed right after
//! dlopen: the mapping keeps the inode alive until dlclose.
//!
//! The one trap is the path. glibc recognises an already-loaded library by
//! the name it was opened with before anything else, and once an fd is
//! closed its number (hence its `/proc/self/fd/N` name) is reused: a later
//! dlopen of `/proc/self/fd/5` would hand back the earlier image still
//! loaded under that name. So before dlopen the name is checked with
//! `RTLD_NOLOAD`; if it is taken, the memfd is duplicated to another
//! number (the taken ones stay open meanwhile, so the next number differs)
//! and that name is tried. No other thread can load a library under a
//! name we are checking: the name's fd is ours while we check and load.

use libloading::os::unix::Library;
use std::ffi::CStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Names tried before giving up (each taken one needs a stale library
/// loaded under it, so more than a couple means something else is wrong).
const MAX_NAMES: usize = 16;

/// Name shown in `/proc/<pid>/maps` for the image's mapping.
const MEMFD_NAME: &CStr = c"omptarget-host-image";

/// dlopen `bytes` from a new memfd with `flags`; the fds are closed on
/// return. The error says which step failed.
pub fn load(bytes: &[u8], flags: i32) -> Result<Library, String> {
    let fd = create(bytes)?;
    // Taken names' fds, held until the load so that dup picks new numbers.
    let mut taken: Vec<OwnedFd> = Vec::new();
    let mut current = fd;
    for _ in 0..MAX_NAMES {
        let path = format!("/proc/self/fd/{}", current.as_raw_fd());
        if !name_is_loaded(&path) {
            // SAFETY: loading runs the image's initialisers; running the
            // offload program's code is the host plugin's purpose.
            return unsafe { Library::open(Some(&path), flags) }
                .map_err(|e| format!("dlopen of {path} failed: {e}"));
        }
        let next = current
            .try_clone()
            .map_err(|e| format!("cannot duplicate the image's memfd: {e}"))?;
        taken.push(std::mem::replace(&mut current, next));
    }
    Err(format!(
        "{MAX_NAMES} /proc/self/fd names in a row already name loaded libraries"
    ))
}

/// A new close-on-exec memfd holding `bytes`.
fn create(bytes: &[u8]) -> Result<OwnedFd, String> {
    // SAFETY: a NUL-terminated name and plain flags.
    let raw = unsafe { libc::memfd_create(MEMFD_NAME.as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(format!(
            "memfd_create failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: memfd_create returned a new fd that nothing else owns.
    let mut file = unsafe { File::from_raw_fd(raw) };
    file.write_all(bytes)
        .map_err(|e| format!("cannot write the image to its memfd: {e}"))?;
    Ok(file.into())
}

/// Whether a library loaded under `path` is still resident.
fn name_is_loaded(path: &str) -> bool {
    // SAFETY: RTLD_NOLOAD loads nothing, so no initialiser runs; a handle
    // it returns holds a reference, dropped by the close below.
    match unsafe { Library::open(Some(path), libc::RTLD_LAZY | libc::RTLD_NOLOAD) } {
        Ok(library) => {
            let _ = library.close();
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memfd_holds_the_bytes() {
        let fd = create(b"image bytes").unwrap();
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        assert_eq!(std::fs::read(&path).unwrap(), b"image bytes");
        // Close-on-exec, so a program the offload program runs does not
        // inherit it.
        // SAFETY: F_GETFD on an fd we own.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }

    #[test]
    fn a_name_nothing_was_loaded_under_is_free() {
        assert!(!name_is_loaded("/proc/self/fd/987654"));
        assert!(name_is_loaded("libc.so.6"));
    }

    #[test]
    fn something_that_is_no_library_is_a_clear_error() {
        let err = load(b"not an ELF file", libc::RTLD_LAZY).unwrap_err();
        assert!(err.contains("dlopen of /proc/self/fd/"), "{err}");
    }
}
