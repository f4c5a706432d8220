//! Programs, their symbols and kernel launches on host devices.
//!
//! A program is a device object loaded on one device: for the host
//! plugin's devices, an x86_64 shared object (`clang -shared -fPIC`), the
//! kind of object an OpenMP host image is. Every function and variable it
//! exports is one of its symbols. It is loaded with every symbol it
//! references bound at once: an object that calls a function nothing
//! defines is refused with the loader's reason, never loaded to fail at
//! its first launch.
//!
//! The calling convention of a host kernel (the argument block of
//! `olLaunchKernel`): `ArgumentsData` is read as consecutive 8-byte slots,
//! each passed to the kernel as one argument of the integer class: a
//! pointer, or a 32- or 64-bit integer (an `int` in its own 8-byte slot
//! reads its low 4 bytes, as C's `struct { int *p; int n; }` lays them
//! out). `char`, `short` and `bool` parameters (which a callee may take as
//! extended by its caller), floating-point ones (read from other
//! registers) and structs passed by value are not supported: pass them by
//! pointer. `ArgumentsSize` must be a multiple of 8.
//!
//! A launch runs its groups one after the other and the items of a group
//! at once, each on a thread of its own (`items`); one item per group
//! runs on the calling thread, inside the session's kernel section (a
//! fork need not wait for it). A kernel learns its ids from the table
//! `items` gives a program that exports `__omptarget_host_gpu` (what
//! `gpuintrin.h` for host devices defines); a kernel of a program without
//! it runs once per item all the same, as a GPU's would. Only a host
//! device of this process runs more than one item (a remote device's
//! kernels run in another process, which this table is not in), groups
//! of at most `items::MAX_GROUP_ITEMS` items; dynamic group memory
//! (`DynSharedMemory`: an `extern __gpu_local` array placed at launch) has
//! no host form: `OL_ERRC_UNSUPPORTED`, never run with another meaning.
//! `Dimensions` is not read.
//!
//! A program is unloaded by whoever lets go of it last: `olDestroyProgram`
//! (or the last `olShutDown`) when no launch of its kernels is running,
//! else the last of those launches when it returns, so that no kernel's
//! code is unmapped under it (a kernel may even destroy its own program).
//! Only host CPU devices (local or remote) load programs: another kind is
//! `OL_ERRC_UNSUPPORTED`.

use super::errors::{ol_error, Errc, Outcome};
use super::handles::{new_handle, Handle};
use super::items::{self, ItemsFailed};
use omptarget::image::{EntryKind, OwnedImage};
use omptarget::{Device, DeviceKind, RegionLaunch};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;

/// `ol_symbol_kind_t`.
pub(crate) mod symbol_kind {
    pub(crate) const KERNEL: u32 = 0;
    pub(crate) const GLOBAL_VARIABLE: u32 = 1;
}

/// One exported function or variable of a loaded program (its name is
/// kept beside it, in [`Program::symbols`]: a launch copies this record
/// under the context's lock, and that copy allocates nothing).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Symbol {
    pub handle: Handle,
    /// `ol_symbol_kind_t`.
    pub kind: u32,
    /// Its device address.
    pub addr: usize,
    /// A variable's size in bytes (0 for a kernel).
    pub size: usize,
    /// The runtime's device it is on.
    pub device_id: usize,
}

/// A program as its device loaded it, shared by its handle and the
/// launches of its kernels that are running.
pub(crate) struct Loaded {
    /// The runtime's device it is loaded on.
    pub device_id: usize,
    /// Its bytes and entry table (the device keeps them alive too while
    /// it is loaded).
    storage: Arc<OwnedImage>,
    /// Set when its handle is gone: whoever holds the last reference then
    /// unloads it.
    released: AtomicBool,
    /// Whether it is loaded in this process (a host device of ours, not a
    /// remote one): only then do its launches run more than one item.
    pub(crate) local: bool,
}

/// A program handle's record.
pub(crate) struct Program {
    pub handle: Handle,
    pub loaded: Arc<Loaded>,
    /// Each exported symbol with its name.
    pub symbols: Vec<(String, Symbol)>,
}

/// The names of the functions and variables `elf` exports (its defined
/// dynamic symbols of those kinds).
/// Each name once (an object may export two versions of one name);
/// functions defined as `STT_GNU_IFUNC` or without a type are not found.
fn exported_names(elf: &[u8]) -> Outcome<Vec<String>> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(elf)
        .map_err(|_| ol_error!(Errc::InvalidBinary, "not an ELF shared object"))?;
    let names: std::collections::BTreeSet<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_definition() && s.is_global())
        .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_owned))
        .collect();
    if names.is_empty() {
        return Err(ol_error!(
            Errc::InvalidBinary,
            "the object exports no function or variable"
        ));
    }
    Ok(names.into_iter().collect())
}

/// Whether `device` could load `bytes` as a program (`olIsValidBinary`):
/// nothing is loaded.
pub(crate) fn is_valid(device: &Device, bytes: &[u8]) -> bool {
    if device.kind() != Some(DeviceKind::HostCpu) {
        return false;
    }
    let Ok(names) = exported_names(bytes) else {
        return false;
    };
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let Ok(storage) = OwnedImage::new(bytes, &name_refs) else {
        return false;
    };
    let desc = storage.as_device_image();
    // SAFETY: `desc` points into `storage`, alive for both calls; asking
    // loads nothing.
    unsafe { device.is_valid_image(desc).unwrap_or(false) && device.can_run_image(desc) }
}

/// Load `bytes` on `device` (the runtime's device `device_id`): the
/// program, with a symbol for each exported function and variable.
///
/// # Safety
/// Loading runs the object's initialisers on this thread, and unloading
/// it its finalisers (as `dlopen` and `dlclose` do): the program vouches
/// for them by asking to load it, as it does with LLVM's `olCreateProgram`.
pub(crate) unsafe fn load(device: &Device, device_id: usize, bytes: &[u8]) -> Outcome<Program> {
    if device.kind() != Some(DeviceKind::HostCpu) {
        return Err(ol_error!(
            Errc::Unsupported,
            "programs load on host CPU devices only, so far"
        ));
    }
    let names = exported_names(bytes)?;
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let storage = Arc::new(OwnedImage::new(bytes, &name_refs).map_err(|reason| {
        tracing::debug!(%reason, "olCreateProgram");
        ol_error!(
            Errc::InvalidBinary,
            "the object cannot be read (see the debug output)"
        )
    })?);
    let desc = storage.as_device_image();
    // SAFETY: `desc` points into `storage`, alive while we hold it.
    let runnable = unsafe { device.is_valid_image(desc) }.unwrap_or(false)
        // SAFETY: as above.
        && unsafe { device.can_run_image(desc) };
    if !runnable {
        return Err(ol_error!(
            Errc::InvalidBinary,
            "the device cannot run this object"
        ));
    }
    // SAFETY: `desc` is valid and the device keeps `storage` alive while
    // it is loaded; the initialisers are the caller's (our contract).
    let loaded =
        unsafe { device.load_image_bind_now(desc, Some(storage.clone())) }.map_err(|e| {
            tracing::debug!(error = %e, "olCreateProgram");
            ol_error!(
                Errc::InvalidBinary,
                "the device could not load the object (see the debug output)"
            )
        })?;
    let kinds: std::collections::HashMap<&str, EntryKind> = storage.entries().collect();
    let symbols: Vec<(String, Symbol)> = loaded
        .entries
        .iter()
        .filter_map(|entry| {
            // SAFETY: the plugin's target table names each entry with a
            // NUL-terminated string it keeps while the image is loaded.
            let name = unsafe { CStr::from_ptr(entry.name) }.to_str().ok()?;
            let kind = *kinds.get(name)?;
            let (kind, size) = match kind {
                EntryKind::Function => (symbol_kind::KERNEL, 0),
                EntryKind::Global { size } => (symbol_kind::GLOBAL_VARIABLE, size),
            };
            let symbol = Symbol {
                handle: new_handle(),
                kind,
                addr: entry.addr as usize,
                size,
                device_id,
            };
            Some((name.to_owned(), symbol))
        })
        .collect();
    drop(kinds);
    let local = !device.is_remote();
    if local {
        if let Some((_, table)) = symbols
            .iter()
            .find(|(name, s)| name == items::TABLE_SYMBOL && s.kind == symbol_kind::GLOBAL_VARIABLE)
        {
            // SAFETY: the program's exported variable of that name, at
            // this process's address (a local host device); loaded just
            // now, so nothing of it runs yet.
            unsafe { items::install(table.addr, table.size) };
        }
    }
    Ok(Program {
        handle: new_handle(),
        loaded: Arc::new(Loaded {
            device_id,
            storage,
            released: AtomicBool::new(false),
            local,
        }),
        symbols,
    })
}

/// Let go of a program whose handle is gone (`olDestroyProgram`, the last
/// `olShutDown`): unloaded now from `device` if no launch of its kernels
/// is running, else by the last of them ([`finish_launch`]).
pub(crate) fn release(device: &Device, loaded: Arc<Loaded>) -> Outcome {
    // Before letting go: a launch that turns out to hold the last
    // reference must see it.
    loaded.released.store(true, SeqCst);
    match Arc::into_inner(loaded) {
        Some(loaded) => unload(device, &loaded),
        None => Ok(()),
    }
}

/// A launch of a kernel of `loaded` has returned: if its program's handle
/// is gone meanwhile and this was the last reference, unload it.
fn finish_launch(device: &Device, loaded: Arc<Loaded>) {
    if let Some(loaded) = Arc::into_inner(loaded) {
        if loaded.released.load(SeqCst) {
            let _ = unload(device, &loaded);
        }
    }
}

/// Unload `loaded` from `device`.
fn unload(device: &Device, loaded: &Loaded) -> Outcome {
    // SAFETY: the image was loaded on this device by `load`; its handle
    // is gone and no launch of its kernels is running (this holds the
    // last reference), so none of its code runs any more.
    match unsafe { device.unload_image(loaded.storage.as_device_image()) } {
        Ok(_) => Ok(()),
        Err(e) => {
            tracing::debug!(error = %e, "olDestroyProgram");
            Err(ol_error!(
                Errc::BackendFailure,
                "the device could not unload the program (see the debug output)"
            ))
        }
    }
}

/// Argument slots a launch passes from its stack (more take a heap copy).
const INLINE_SLOTS: usize = 16;

/// `ol_kernel_launch_size_args_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchSize {
    dimensions: usize,
    groups: [u32; 3],
    group_size: [u32; 3],
    dyn_shared_memory: usize,
}

/// Run `kernel` (a kernel symbol of the program `loaded`, on `device`)
/// with the argument block `args` of `size` bytes, as the module docs
/// say; `loaded` is held until the kernel returns. The launch was checked
/// ([`check_launch`]).
///
/// # Safety
/// `args` is readable for `size` bytes; the arguments are what the
/// kernel expects, every pointer among them valid device memory for what
/// it does (the program's word, as with LLVM's `olLaunchKernel`).
pub(crate) unsafe fn launch(
    device: &Device,
    loaded: Arc<Loaded>,
    kernel: &Symbol,
    args: *const c_void,
    size: usize,
    launch: &LaunchSize,
) -> Outcome {
    // SAFETY: our contract.
    let ran = unsafe { run(device, kernel, args, size, launch) };
    finish_launch(device, loaded);
    ran
}

/// LLVM's checks of a launch, and a host device's: what it refuses
/// before anything runs (a queued launch is refused at once, not at its
/// queue's next sync). Its size, copied.
///
/// # Safety
/// `launch` is a readable `ol_kernel_launch_size_args_t`.
pub(crate) unsafe fn check_launch(
    local: bool,
    kernel: &Symbol,
    args: *const c_void,
    size: usize,
    launch: *const LaunchSize,
) -> Outcome<LaunchSize> {
    if kernel.kind != symbol_kind::KERNEL {
        return Err(ol_error!(
            Errc::SymbolKind,
            "provided symbol is not a kernel"
        ));
    }
    // SAFETY: readable (our contract).
    let launch = unsafe { *launch };
    if launch.groups.contains(&0) || launch.group_size.contains(&0) {
        return Err(ol_error!(
            Errc::InvalidArgument,
            "a launch has at least one group of one item in each dimension"
        ));
    }
    let group_items = items::count(launch.group_size);
    if group_items > u64::from(items::MAX_GROUP_ITEMS) {
        return Err(ol_error!(
            Errc::InvalidArgument,
            "a host device runs groups of at most 1024 items (OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE)"
        ));
    }
    if items::count(launch.groups).saturating_mul(group_items) > u64::from(u32::MAX) {
        return Err(ol_error!(
            Errc::InvalidArgument,
            "a launch of more than 2^32 - 1 items (OL_DEVICE_INFO_MAX_WORK_SIZE)"
        ));
    }
    let single = launch.groups == [1; 3] && group_items == 1;
    if !single && !local {
        return Err(ol_error!(
            Errc::Unsupported,
            "a remote host device runs one group of one item"
        ));
    }
    if launch.dyn_shared_memory != 0 {
        return Err(ol_error!(
            Errc::Unsupported,
            "dynamic group memory (an extern __gpu_local array placed at launch) has no host form"
        ));
    }
    if !size.is_multiple_of(8) || (size > 0 && args.is_null()) {
        return Err(ol_error!(
            Errc::InvalidArgument,
            "a host kernel's arguments are 8-byte slots: ArgumentsSize must be a multiple of 8"
        ));
    }
    Ok(launch)
}

/// [`launch`]'s run of a checked launch.
///
/// # Safety
/// As [`launch`].
unsafe fn run(
    device: &Device,
    kernel: &Symbol,
    args: *const c_void,
    size: usize,
    launch: &LaunchSize,
) -> Outcome {
    // Each item reads the argument block into slots of its own, on its
    // stack for up to INLINE_SLOTS of them: a launch allocates nothing.
    // The block is read as an address: the items' threads share it, and
    // it stays readable until every item has returned (our contract).
    let block = args as usize;
    let count = size / 8;
    let read_into = |slots: &mut [*mut c_void]| {
        for (i, slot) in slots.iter_mut().enumerate() {
            // SAFETY: slot `i` lies within the `size` readable bytes (our
            // contract); the block need not be aligned.
            *slot = unsafe { ((block + i * 8) as *const usize).read_unaligned() } as *mut c_void;
        }
    };
    let run_item = || {
        let mut inline_slots = [std::ptr::null_mut(); INLINE_SLOTS];
        let mut inline_offsets = [0isize; INLINE_SLOTS];
        let (mut heap_slots, mut heap_offsets) = (Vec::new(), Vec::new());
        let (slots, offsets): (&mut [*mut c_void], &mut [isize]) = if count <= INLINE_SLOTS {
            (&mut inline_slots[..count], &mut inline_offsets[..count])
        } else {
            heap_slots.resize(count, std::ptr::null_mut());
            heap_offsets.resize(count, 0);
            (&mut heap_slots, &mut heap_offsets)
        };
        read_into(slots);
        // SAFETY: `kernel.addr` is the device address of a kernel of an
        // image loaded on `device`, which stays loaded while the caller
        // holds its program; the arguments are the program's (our
        // contract).
        unsafe {
            device.run_region(
                kernel.addr as *mut c_void,
                slots,
                offsets,
                RegionLaunch::Single,
            )
        }
    };
    let failed = |e: omptarget::Error| {
        tracing::debug!(error = %e, "olLaunchKernel");
        ol_error!(
            Errc::BackendFailure,
            "the launch failed (see the debug output)"
        )
    };
    let mut ran = Ok(());
    // Inside the kernel section: the thread holds no lock of the runtime
    // while the kernel runs, so a fork need not wait for it.
    crate::session::lifecycle::kernel_section(&mut || {
        // One item runs on this thread, as item 0 of one group of one.
        ran = match items::run_items(launch.groups, launch.group_size, &run_item) {
            Ok(()) => Ok(()),
            Err(ItemsFailed::Item(e)) => Err(failed(e)),
            Err(ItemsFailed::Threads(e)) => {
                tracing::debug!(error = %e, "olLaunchKernel: starting the items' threads");
                Err(ol_error!(
                    Errc::OutOfResources,
                    "the group's threads could not be started (see the debug output)"
                ))
            }
            Err(ItemsFailed::Panicked) => Err(ol_error!(
                Errc::BackendFailure,
                "internal error in omptarget-rs: an item's thread panicked"
            )),
        };
    });
    ran
}
