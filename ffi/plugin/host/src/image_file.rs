//! The private file an image is dlopened from, where it is not loaded from
//! memory (see [`super::image`]: the fallback, or forced by the settings).
//!
//! Created with `mkstemps` rather than a temp-file crate: those seed their
//! random names from `std::thread::current()`, which registers a
//! thread-exit destructor (a pthread key) inside this library; once the
//! library is dlclosed, that destructor would run unmapped code when the
//! thread exits. Names are `omptarget-host-image-<pid>-<seq>-XXXXXX.so`:
//! the pid and the sequence number make every name unique within the
//! process even after the file is removed, which is what dlopen's
//! name-based lookup needs (see [`super::image`]).

use omptarget_plugin_kit::error::{PluginError, Result};
use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Sequence number of the next image file.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// A file holding an image's bytes; removed on drop unless already removed.
#[derive(Debug)]
pub struct ImageFile {
    path: Option<PathBuf>,
}

impl ImageFile {
    /// Create a new file in `dir` holding `bytes`.
    pub fn create(dir: &Path, bytes: &[u8]) -> Result<Self> {
        let sequence = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "omptarget-host-image-{}-{sequence}-XXXXXX.so",
            std::process::id()
        );
        let template = CString::new(dir.join(name).into_os_string().into_vec()).map_err(|_| {
            PluginError::backend(format!(
                "image directory {} contains a NUL byte",
                dir.display()
            ))
        })?;
        let mut template = template.into_bytes_with_nul();
        // SAFETY: `template` is a writable NUL-terminated buffer ending in
        // `XXXXXX.so`; mkstemps replaces the X's in place.
        let fd = unsafe { libc::mkstemps(template.as_mut_ptr().cast(), 3) };
        if fd < 0 {
            return Err(PluginError::backend(format!(
                "cannot create an image file in {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            )));
        }
        template.pop(); // the NUL
        let path = PathBuf::from(OsString::from_vec(template));
        let file = Self { path: Some(path) };
        // SAFETY: mkstemps returned a new fd that nothing else owns.
        let mut handle = unsafe { std::fs::File::from_raw_fd(fd) };
        handle.write_all(bytes).map_err(|e| {
            PluginError::backend(format!("cannot write {}: {e}", file.path_display()))
        })?;
        Ok(file)
    }

    /// The file's path, until it is removed.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn path_display(&self) -> String {
        self.path
            .as_deref()
            .map_or_else(String::new, |p| p.display().to_string())
    }

    /// Remove the file (once).
    pub fn remove(&mut self) -> Result<()> {
        match self.path.take() {
            Some(path) => std::fs::remove_file(&path).map_err(|e| {
                PluginError::backend(format!("cannot remove {}: {e}", path.display()))
            }),
            None => Ok(()),
        }
    }
}

impl Drop for ImageFile {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn files_have_unique_names_and_are_removed() {
        let dir = std::env::temp_dir();
        let mut a = ImageFile::create(&dir, b"abc").unwrap();
        let b = ImageFile::create(&dir, b"").unwrap();
        let (pa, pb) = (a.path().unwrap().to_owned(), b.path().unwrap().to_owned());
        assert_ne!(pa, pb);
        assert!(pa.as_os_str().as_bytes().ends_with(b".so"));
        assert_eq!(std::fs::read(&pa).unwrap(), b"abc");
        a.remove().unwrap();
        assert!(!pa.exists());
        drop(b);
        assert!(!pb.exists());
    }

    #[test]
    fn a_missing_directory_is_a_clear_error() {
        let err = ImageFile::create(Path::new("/nonexistent/omptarget"), b"x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/omptarget"), "{err}");
    }
}
