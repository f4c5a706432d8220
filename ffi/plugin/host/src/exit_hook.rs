//! Redirect a loaded image's `exit` to
//! [`omptarget_thread_exit::process_exit::kernel_exit`].
//!
//! A kernel's `exit()` on a libomp hidden helper thread (a `target nowait`
//! region) hangs the process inside libomp's finaliser; `kernel_exit`
//! ends it with the kernel's status instead, and is plain `exit` on every
//! other thread (see its module docs). Only the image's own calls are
//! redirected: its GOT slots for `exit`, found from its relocations
//! ([`elf::import_slots`]) and written once it is loaded, before any of its
//! kernels can run. A call made from another library the kernel calls
//! into is not seen.

use crate::elf;
use omptarget_plugin_kit::PluginError;
use std::ops::Range;

type Result<T> = std::result::Result<T, PluginError>;

/// Write `kernel_exit`'s address into every GOT slot of `exit` of the
/// image loaded at `base` from `bytes`. Slots in `read_only` (its
/// `PT_GNU_RELRO` part, write-protected by the loader once relocated) are
/// made writable for the write and read-only again. Returns how many slots
/// were written.
///
/// # Safety
/// `bytes` is the file the loader mapped at `base`, the image is loaded
/// (relocated) and none of its code runs on another thread meanwhile;
/// `read_only` are its read-only ranges as loaded.
pub unsafe fn redirect_exit(
    bytes: &[u8],
    base: usize,
    read_only: &[Range<usize>],
) -> Result<usize> {
    let slots = elf::import_slots(bytes, b"exit").map_err(PluginError::InvalidImage)?;
    let hook = omptarget_thread_exit::process_exit::kernel_exit as extern "C" fn(i32) -> !;
    for offset in &slots {
        let slot = base.wrapping_add(*offset as usize);
        // The loader write-protects only the whole pages of a read-only
        // range (it rounds its end down): a slot on the range's last,
        // partial page shares it with writable data and is left writable.
        let page = page_size();
        let slot_page = slot & !(page - 1);
        let protected = read_only.iter().any(|range| {
            range.start & !(page - 1) <= slot_page && slot_page < range.end & !(page - 1)
        });
        // SAFETY: `slot` is a GOT slot of the loaded image (a relocation's
        // target inside it, per the contract), pointer-sized and aligned;
        // the page is made writable first where the loader protected it.
        unsafe {
            if protected {
                protect(slot, libc::PROT_READ | libc::PROT_WRITE)?;
            }
            (slot as *mut usize).write(hook as usize);
            if protected {
                protect(slot, libc::PROT_READ)?;
            }
        }
    }
    Ok(slots.len())
}

/// `mprotect` the page holding `addr`.
///
/// # Safety
/// The page is mapped, and no other code relies on its protection while
/// it differs from the loader's.
unsafe fn protect(addr: usize, protection: i32) -> Result<()> {
    let start = addr & !(page_size() - 1);
    // SAFETY: per this function's contract, one mapped page.
    if unsafe { libc::mprotect(start as *mut libc::c_void, page_size(), protection) } != 0 {
        return Err(PluginError::backend(format!(
            "mprotect of a device image's GOT page failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}
