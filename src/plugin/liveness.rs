//! Whether a plugin may still be called, and the destruction callback that
//! lets a plugin say it is gone.
//!
//! The runtime registers [`on_plugin_destroyed`] with `data` = the address
//! of the plugin's [`Liveness`]. That object lives on the heap (in an `Arc`)
//! and is freed only after the library handle is closed *and* the plugin can
//! no longer call back (see [`super::Plugin::close`]); if that cannot be
//! established it is deliberately leaked, which costs a few bytes, never a
//! dangling `data`.
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// The states that forbid calling into a plugin.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    /// The plugin called the destruction callback.
    destroyed: AtomicBool,
    /// The runtime closed the library.
    closed: AtomicBool,
}

impl Liveness {
    /// True while entries may be called.
    pub fn callable(&self) -> bool {
        !self.destroyed.load(Ordering::Acquire) && !self.closed.load(Ordering::Acquire)
    }

    /// True once the plugin reported its own destruction.
    pub fn destroyed(&self) -> bool {
        self.destroyed.load(Ordering::Acquire)
    }

    pub fn mark_destroyed(&self) {
        self.destroyed.store(true, Ordering::Release);
    }

    pub fn mark_closed(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// The `data` argument for `register_destruction_cb`.
    pub fn as_callback_data(&self) -> *mut c_void {
        self as *const Liveness as *mut c_void
    }
}

/// The destruction callback handed to `__tgt_rtl_register_destruction_cb`.
///
/// # Safety
/// `data` is null or the value of [`Liveness::as_callback_data`] of a
/// `Liveness` that is still allocated (the runtime keeps it alive for as
/// long as the plugin can call back). May be called from any thread, at any
/// time, including from the plugin's library destructor during `dlclose` or
/// process exit: it only stores an atomic flag.
pub(crate) unsafe extern "C" fn on_plugin_destroyed(data: *mut c_void) {
    // Panic boundary: nothing below can panic, but never unwind into C.
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: per this function's contract.
        if let Some(liveness) = unsafe { (data as *const Liveness).as_ref() } {
            liveness.mark_destroyed();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_marks_destroyed() {
        let l = Liveness::default();
        assert!(l.callable());
        // SAFETY: `l` is alive.
        unsafe { on_plugin_destroyed(l.as_callback_data()) };
        assert!(l.destroyed());
        assert!(!l.callable());
        // Null data is ignored.
        // SAFETY: null is the one invalid value the callback checks for.
        unsafe { on_plugin_destroyed(std::ptr::null_mut()) };
    }
}
