//! Loading a device's registered images without holding a lock across the
//! plugin's `load_binary` (LLVM's `InitLibrary` holds its translation
//! table and pending-globals locks across it, and deadlocks).
//!
//! `load_binary` may take the dynamic loader's lock (the host plugin
//! dlopens each image), and a thread running a library's constructor or
//! destructor holds that lock while it registers or unregisters, taking
//! the registry's locks. So loading is three steps:
//!
//! 1. under `tables`: list what this device lacks ([`LoadJob`]s, each with
//!    its own reference to the runtime's copy of the image);
//! 2. no lock: `load_binary` each;
//! 3. under `tables` again: publish each result ([`Offload::publish`]).
//!
//! Threads racing for a device's first region load each image once: one
//! loads, the others wait for it holding no lock ([`super::in_flight`]),
//! then look again. That wait is bounded, since the loading thread may be
//! waiting for the loader's lock the waiting one holds (a constructor that
//! offloads): then both load, the first to publish wins, and the other copy
//! is recorded to be unloaded with the binary. A binary unregistered while
//! its image loads has no table to publish into: its copy is unloaded at
//! once.

use super::error::OffloadError;
use super::image_copy::ImageCopy;
use super::in_flight::Turn;
use super::registry::{Tables, TargetEntry};
use super::{DeviceCtx, Offload};
use omptarget::abi::{declare_target, OffloadEntry};
use omptarget::device::DevicePtr;
use std::sync::Arc;

/// One image to load on a device, as listed under the lock.
struct LoadJob {
    /// The table's key and its registration's serial.
    entries_begin: usize,
    serial: u64,
    image: Arc<ImageCopy>,
}

/// What publishing a loaded image found.
enum Published {
    /// Nothing more to do: its target table is the device's now, or another
    /// thread's copy was published first (this one is kept for the
    /// unregistration), or an orphan's load failed.
    Done,
    /// The binary was unregistered, or registered another image for the
    /// device, while this one loaded: nothing refers to this copy.
    Orphan,
}

impl<'a> Offload<'a> {
    /// Load every registered image the device lacks, in registration
    /// order, holding no lock while the plugin loads. Stops at the first
    /// failure, reported as LLVM reports it.
    pub(crate) fn load_images(&self, dev: &DeviceCtx<'a>) -> Result<(), OffloadError> {
        let _span = omptarget::profile::span(omptarget::profile::Kind::Registration, "load images")
            .map(|s| s.device(dev.id as usize));
        // Under unified memory only, and once: the caller's release (a stack
        // walk) decides whether the device's global references are written.
        let mut usm_writes = None;
        'listing: loop {
            let (jobs, missing_image) = self.load_jobs(dev);
            for job in jobs {
                let usm_writes = *usm_writes.get_or_insert_with(|| {
                    self.registry.unified_shared_memory()
                        && self.host.caller_release().writes_globals_for_usm()
                });
                // The address is the copy's, alive while `job` holds it.
                let key = Arc::as_ptr(&job.image) as usize;
                // Held until published: waiters then see the result.
                let _in_flight = match dev.slot.loads.begin(key, dev.slot.loads.wait()) {
                    Turn::Load(loading) => Some(loading),
                    // Published, failed or orphaned: list again.
                    Turn::Ended => continue 'listing,
                    Turn::Overdue => None,
                };
                // Another thread may have loaded and published it between
                // the listing and this turn.
                if !self.still_missing(dev, &job) {
                    continue 'listing;
                }
                let storage: Arc<dyn std::any::Any + Send + Sync> = job.image.clone();
                // SAFETY: the copy is alive (`job` holds it, and the device
                // keeps it while the image is loaded).
                let loaded = unsafe { dev.ops.load_binary(job.image.device_image(), storage) }.map(
                    |mut entries| {
                        keep_vtables_at_home(&job.image, &mut entries);
                        // LLVM 19/22's plugins report it before anything
                        // else is done with it (globals, constructors).
                        let (start, bytes) = job.image.source();
                        self.ompt_image_loaded(dev, start, bytes);
                        if usm_writes {
                            self.write_usm_globals(dev, &job.image, &entries);
                        }
                        let mapped = self.mapped_addresses(dev, &job.image, &entries);
                        (entries, mapped)
                    },
                );
                match self.publish(dev, &job, loaded)? {
                    Published::Done => {}
                    Published::Orphan => self.unload_orphan(dev, &job.image),
                }
            }
            if missing_image {
                return Err(self.report(OffloadError::NoImageLoaded { device: dev.id }));
            }
            return Ok(());
        }
    }

    /// Step 1: the images to load, up to the first table that has none
    /// for this device (`true`: such a table stopped the list).
    fn load_jobs(&self, dev: &DeviceCtx<'a>) -> (Vec<LoadJob>, bool) {
        let device = dev.id as usize;
        let supports_empty = dev.ops.supports_empty_images();
        let tables = self.registry.read_tables();
        let mut jobs = Vec::new();
        for entries_begin in &tables.registration_order {
            let Some(table) = tables.by_entries_begin.get(entries_begin) else {
                continue;
            };
            if table.host_entries.is_empty() && !supports_empty {
                continue;
            }
            if table.target(device).is_some() {
                continue;
            }
            let Some(image) = table.image(device) else {
                return (jobs, true);
            };
            jobs.push(LoadJob {
                entries_begin: *entries_begin,
                serial: table.serial,
                image,
            });
        }
        (jobs, false)
    }

    /// Is `job`'s table still registered, with the same image for the
    /// device, and no target table there yet?
    fn still_missing(&self, dev: &DeviceCtx<'a>, job: &LoadJob) -> bool {
        let device = dev.id as usize;
        // Only reads: no new tables generation (cached launch entries stay).
        let mut tables = self.registry.read_tables();
        current_table(&mut tables, job, device).is_some_and(|t| t.target(device).is_none())
    }

    /// Between steps 2 and 3, holding no lock (it calls the plugin): the
    /// device address each loaded entry's host address maps to, `None` for
    /// an entry that maps nothing. A global maps to its device copy; a
    /// `declare target indirect` function's device symbol is a global
    /// holding the device function's address, and the host function maps
    /// to that address, read from the device as LLVM reads it (19:
    /// `omptarget.cpp` `InitLibrary`, 22: `PluginManager.cpp`, "follow the
    /// indirection"), with its INFO line. A read that fails maps nothing
    /// (LLVM ignores that failure and maps whatever its buffer held).
    fn mapped_addresses(
        &self,
        dev: &DeviceCtx<'a>,
        image: &ImageCopy,
        loaded: &[OffloadEntry],
    ) -> Vec<Option<usize>> {
        let flags = image.entries().iter().map(|e| e.flags);
        loaded
            .iter()
            .zip(flags.chain(std::iter::repeat(0)))
            .map(|(entry, flags)| {
                if entry.size == 0 {
                    return None;
                }
                if flags & declare_target::INDIRECT == 0 {
                    return Some(entry.addr as usize);
                }
                let mut function = 0usize;
                let host = &mut function as *mut usize;
                let size = std::mem::size_of::<usize>();
                self.info_transfer(
                    dev,
                    false,
                    host as usize,
                    entry.addr as usize,
                    size as i64,
                    0,
                );
                // SAFETY: `host` is the live local `function`, `size`
                // writable bytes; `entry.addr` is the device global the
                // plugin just loaded, of `entry.size` >= `size` bytes
                // (an indirect entry is one function pointer).
                let read = (entry.size >= size).then(|| unsafe {
                    dev.ops
                        .retrieve(host.cast(), DevicePtr::from_raw(entry.addr), size)
                });
                match read {
                    Some(Ok(())) => Some(function),
                    _ => {
                        self.report(OffloadError::CopyFromDeviceFailed);
                        None
                    }
                }
            })
            .collect()
    }

    /// LLVM 15+ under `requires unified_shared_memory`: each device global
    /// of a loaded image is a reference to the host's (clang's
    /// `_decl_tgt_ref_ptr`), so the host entry's bytes (the host address
    /// it refers to) are written into it, with no INFO line (19:
    /// `omptarget.cpp` `InitLibrary`, 22: `PluginManager.cpp`). LLVM 14
    /// writes nothing and the kernel reads a null reference. Indirect
    /// functions and vtables are skipped, as LLVM 22 skips them (their
    /// device global holds the device function's, or vtable's, address: a
    /// vtable's host bytes written there would overrun it and corrupt the
    /// loaded image's data). A failed write is reported as
    /// LLVM reports it and the load goes on.
    fn write_usm_globals(&self, dev: &DeviceCtx<'a>, image: &ImageCopy, loaded: &[OffloadEntry]) {
        for (host, device) in image.entries().iter().zip(loaded) {
            let not_a_reference = declare_target::INDIRECT | declare_target::INDIRECT_VTABLE;
            if device.size == 0 || host.flags & not_a_reference != 0 {
                continue;
            }
            // SAFETY: `host.addr` is the registered binary's global of
            // `host.size` readable bytes; `device.addr` is its device copy
            // the plugin just loaded, of the same size (LLVM copies
            // `Entry.Size` bytes the same way).
            let written = unsafe {
                dev.ops.submit(
                    DevicePtr::from_raw(device.addr),
                    host.addr as *const std::ffi::c_void,
                    host.size.min(device.size),
                )
            };
            if written.is_err() {
                // SAFETY: a host entry's name is its binary's NUL-terminated
                // symbol name (or null).
                let name = unsafe { super::diag::name_from_mapping(host.name) };
                self.emit(super::diag::Diagnostic::Error(format!(
                    "Failed to write symbol for USM {name}"
                )));
            }
        }
    }

    /// Step 3: publish one load's result under `tables`. `Err` is the
    /// load's failure (as LLVM reports it); an orphan is not an error.
    /// A global's mapping is named after its symbol (a copy that outlives
    /// the binary), which LLVM 15+ show in INFO lines and table dumps and
    /// LLVM 14 does not (decided when printing: [`Release::names_global_mappings`]).
    ///
    /// [`Release::names_global_mappings`]: super::Release::names_global_mappings
    fn publish(
        &self,
        dev: &DeviceCtx<'a>,
        job: &LoadJob,
        loaded: Result<(Vec<OffloadEntry>, Vec<Option<usize>>), super::OpFailed>,
    ) -> Result<Published, OffloadError> {
        let device = dev.id as usize;
        let mut tables = self.registry.lock_tables();
        let Some(table) = current_table(&mut tables, job, device) else {
            // A failed load of an orphan is nobody's error any more.
            return Ok(match loaded {
                Ok(_) => Published::Orphan,
                Err(_) => Published::Done,
            });
        };
        let Ok((loaded, mapped)) = loaded else {
            if table.target(device).is_some() {
                // Another thread's load of it succeeded: use that one.
                return Ok(Published::Done);
            }
            table.images[device] = None;
            return Err(self.report(OffloadError::NoEntriesTable { device: dev.id }));
        };
        // Loaded: unloaded with the binary from now on, whatever follows.
        table.loaded.push((device, job.image.clone()));
        if table.target(device).is_some() {
            // Another thread published its copy first; this one is kept
            // unused (see `TranslationTable::loaded`).
            return Ok(Published::Done);
        }
        if loaded.len() != table.host_entries.len() {
            table.images[device] = None;
            table.targets[device] = None;
            return Err(self.report(OffloadError::TablesMismatch {
                device: dev.id,
                host: table.host_entries.len(),
                target: loaded.len(),
            }));
        }
        let targets: Vec<TargetEntry> = loaded
            .iter()
            .map(|e| TargetEntry {
                addr: e.addr as usize,
                size: e.size,
            })
            .collect();
        let mappings = dev.ops.mappings();
        for (host, target) in table.host_entries.iter().zip(&mapped) {
            let Some(target) = *target else { continue };
            // SAFETY: the table is registered (we hold `tables`), so its
            // host entries' names are its binary's live strings.
            let name = unsafe { self.registry.intern_global_name(host.name) };
            if mappings.insert_global(host.addr, host.size, target, name) {
                table.globals.push((dev.id, host.addr, target));
            }
        }
        table.targets[device] = Some(Arc::new(targets));
        Ok(Published::Done)
    }

    /// Unload a copy nothing refers to (no lock held: it may dlclose).
    fn unload_orphan(&self, dev: &DeviceCtx<'a>, image: &ImageCopy) {
        // SAFETY: loaded on this device just now; the device's image record
        // keeps the copy alive until it is unloaded.
        if let Err(err) = unsafe { dev.ops.unload_binary(image.device_image()) } {
            tracing::debug!(device = dev.id, error = %err, "unloading the image of an unregistered binary failed");
        }
    }
}

/// Clang 22's vtable entries (`INDIRECT_VTABLE`) name a device global of
/// one pointer, not a copy of the vtable, so the plugin's address for one
/// is no device counterpart of the host's `size` bytes: LLVM 22
/// (`PluginManager.cpp`) does not look it up and keeps the host address as
/// the device entry's, so the vtable maps to itself (objects keep their
/// host vtable pointers; host devices call through them, and GPU plugins
/// translate calls with their own table, which ours do not build).
fn keep_vtables_at_home(image: &ImageCopy, loaded: &mut [OffloadEntry]) {
    for (host, device) in image.entries().iter().zip(loaded) {
        if host.flags & declare_target::INDIRECT_VTABLE != 0 && host.size != 0 {
            device.addr = host.addr;
            device.size = host.size;
        }
    }
}

/// The table `job` was listed from, if it is still registered with the
/// same image for the device.
fn current_table<'t>(
    tables: &'t mut Tables,
    job: &LoadJob,
    device: usize,
) -> Option<&'t mut super::registry::TranslationTable> {
    let table = tables.by_entries_begin.get_mut(&job.entries_begin)?;
    let same_image = table
        .image(device)
        .is_some_and(|image| Arc::ptr_eq(&image, &job.image));
    (table.serial == job.serial && same_image).then_some(table)
}
