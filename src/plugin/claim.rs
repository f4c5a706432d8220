//! One runtime per plugin library, per process.
//!
//! A plugin keeps its state in the library itself (`init_plugin` to
//! `deinit_plugin`), and opening a library twice yields the same loaded
//! object. Two `Runtime`s sharing one would initialise its devices twice
//! and deinitialise it under each other, so a runtime claims each library
//! it loads; another runtime in the same process that finds it claimed
//! skips it with a clear reason. (A second copy of the file, at another
//! path, is a separate library with separate state.)

use std::sync::Mutex;

/// The `dlopen` handles of the libraries claimed by live runtimes.
static CLAIMED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A runtime's claim on one loaded library; released on drop (after the
/// library was closed).
#[derive(Debug)]
pub(crate) struct Claim(usize);

impl Claim {
    /// Claim the library whose `dlopen` handle is `handle`, unless another
    /// runtime holds it.
    pub(crate) fn take(handle: usize) -> Option<Claim> {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        if claimed.contains(&handle) {
            return None;
        }
        claimed.push(handle);
        Some(Claim(handle))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        claimed.retain(|&h| h != self.0);
        if claimed.is_empty() {
            // Give the buffer back: nothing of ours stays allocated once no
            // runtime is alive (valgrind checks it at exit).
            *claimed = Vec::new();
        }
    }
}
