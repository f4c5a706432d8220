//! An exclusive `flock` on a file: work that concurrent test processes
//! share (staging, building one C program) is done by one at a time.

use std::os::unix::io::AsRawFd;
use std::path::Path;

/// An exclusive lock, released when dropped (or when the process dies, so
/// a crashed test never leaves it held).
pub struct FileLock {
    file: std::fs::File,
}

impl FileLock {
    /// Waits for and takes the lock on `path` (created if missing).
    pub fn acquire(path: &Path) -> Result<FileLock, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor this struct owns for its lifetime.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: unlocks the descriptor locked in `acquire`; closing it
        // right after would release the lock anyway.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}
