//! Registration of host binaries and requires flags (LLVM's `RegisterLib`,
//! `UnregisterLib`, `RegisterRequires`, `initRTLonce`).
//!
//! A plugin becomes "used" when it is the first (in load order) to accept
//! one of a binary's images; its devices then get the next OpenMP device
//! numbers. Each image is copied (`image_copy`), recorded for
//! every device of its plugin that can run it (`is_device_compatible`;
//! every device, for a plugin without that entry) and loaded lazily on
//! the device's first use ([`super::init`], `load`). A device that can run
//! none of a binary's images keeps its number (LLVM 20+ numbers only the
//! devices that can); a region there fails as on a device without an
//! image.
//!
//! Both run from clang's library constructors and destructors, which hold
//! the dynamic loader's lock: they take only the registry's short locks,
//! which no thread holds while it waits for that lock (a thread loading or
//! unloading an image holds none of ours).

use super::diag::Fatal;
use super::entry_layout;
use super::image_copy::ImageCopy;
use super::info::INFO_DUMP_TABLE;
use super::registry::{DeviceSlot, HostEntry, Plugins, TranslationTable, UsedPlugin};
use super::Offload;
use omptarget::abi::{declare_target, requires, BinDesc, DeviceImage, OffloadEntry};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The entries `[begin, end)` of a table, or nothing when the bounds are
/// null or reversed.
///
/// # Safety
/// A non-empty range is a valid, aligned array of entries that nothing
/// mutates for as long as the returned slice lives. The lifetime `'e` is
/// not tied to any argument (the bounds are raw pointers): the caller
/// picks it and must keep it within the life of the array, in practice
/// within the borrow of the descriptor or image that holds `begin`/`end`
/// (every caller here uses the slice within that borrow).
pub(crate) unsafe fn entries<'e>(
    begin: *const OffloadEntry,
    end: *const OffloadEntry,
) -> &'e [OffloadEntry] {
    if begin.is_null() || end.is_null() || end <= begin {
        return &[];
    }
    let count = (end as usize - begin as usize) / std::mem::size_of::<OffloadEntry>();
    // SAFETY: our `# Safety`: the range is non-empty here (both bounds
    // non-null, `begin < end`), so it is a valid array of `count` entries
    // that stays unmutated for the caller-bounded `'e`.
    unsafe { std::slice::from_raw_parts(begin, count) }
}

/// A descriptor's host entries in the layout its compiler wrote
/// ([`entry_layout`]), as 32-byte entries.
///
/// # Safety
/// `desc`'s host entry range is null, empty or a valid table, unmutated
/// during the call.
unsafe fn host_entries(desc: &BinDesc) -> entry_layout::Entries {
    // SAFETY: our `# Safety`.
    unsafe {
        entry_layout::read(
            desc.host_entries_begin as *const c_void,
            desc.host_entries_end as *const c_void,
        )
    }
}

/// Pointers to the device images of a descriptor (none when the array is
/// null or the count is not positive). Pointers rather than a slice: no
/// reference of a lifetime the descriptor does not bound is made, and the
/// pointers keep the descriptor's (mutable) provenance for the plugins.
/// Dereferencing one needs the descriptor's arrays to be valid.
fn images(desc: &BinDesc) -> impl Iterator<Item = *mut DeviceImage> + '_ {
    let count = usize::try_from(desc.num_device_images).unwrap_or(0);
    let count = if desc.device_images.is_null() {
        0
    } else {
        count
    };
    (0..count).map(|i| desc.device_images.wrapping_add(i))
}

impl Offload<'_> {
    /// `__tgt_register_requires(flags)`: the first call sets the flags;
    /// later ones must agree on reverse_offload, unified_address and
    /// unified_shared_memory (and dynamic_allocators for LLVM 19+'s
    /// callers), or the program dies as under the caller's LLVM
    /// ([`Release::requires_mismatch`](super::release::Release::requires_mismatch)).
    pub fn register_requires(&self, flags: i64) -> Result<(), Fatal> {
        // The first registration wins the exchange; later ones (or a
        // racing one) compare against the flags it set.
        let current = match self.registry.requires.compare_exchange(
            requires::UNDEFINED,
            flags,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // Recorded here only: devices get them when they initialise
            // (DeviceOps::init), the one route flags take to a plugin.
            Ok(_) => return Ok(()),
            Err(current) => current,
        };
        let (code, dynamic_allocators) = self.host.caller_release().requires_mismatch();
        let checks = [
            (
                requires::REVERSE_OFFLOAD,
                "'#pragma omp requires reverse_offload' not used consistently!",
            ),
            (
                requires::UNIFIED_ADDRESS,
                "'#pragma omp requires unified_address' not used consistently!",
            ),
            (
                requires::UNIFIED_SHARED_MEMORY,
                "'#pragma omp requires unified_shared_memory' not used consistently!",
            ),
            (
                if dynamic_allocators {
                    requires::DYNAMIC_ALLOCATORS
                } else {
                    0
                },
                "'#pragma omp requires dynamic_allocators' not used consistently!",
            ),
        ];
        for (bit, text) in checks {
            if (current & bit) != (flags & bit) {
                return Err(Fatal::new(code, text));
            }
        }
        Ok(())
    }

    /// LLVM's `LoadRTLs`, once: read the offload policy; unless offloading
    /// is disabled, every plugin with devices becomes available.
    fn load_plugins_once(&self, plugins: &mut Plugins) {
        if plugins.loaded {
            return;
        }
        plugins.loaded = true;
        let policy = self.host.target_offload_policy();
        self.registry.set_policy(policy);
        // LLVM 19+ load the plugins even with offloading disabled (their
        // devices count, nothing runs there); LLVM 14 loads none.
        if policy == super::TargetOffloadPolicy::Disabled
            && !self.host.caller_release().counts_devices_when_disabled()
        {
            return;
        }
        plugins.available = (0..self.platform.plugin_count())
            .filter(|&p| self.platform.plugin_device_count(p) > 0)
            .collect();
    }

    /// LLVM's `initRTLonce`: give a plugin's devices the next numbers.
    fn use_plugin(&self, plugins: &mut Plugins, plugin: usize) -> UsedPlugin {
        if let Some(used) = plugins.used.iter().find(|u| u.plugin == plugin) {
            return *used;
        }
        // Only holders of the `plugins` write lock add devices, so the
        // table cannot grow between these two steps.
        let device_count = self.platform.plugin_device_count(plugin);
        let first_device = self.registry.devices.extend(device_count, |index, local| {
            DeviceSlot::new(index as i32, plugin, local)
        });
        let used = UsedPlugin {
            plugin,
            first_device,
            device_count,
        };
        plugins.used.push(used);
        used
    }

    /// `__tgt_init_all_rtls()`: use every available plugin.
    pub fn init_all_plugins(&self) {
        let mut plugins = self.registry.write_plugins();
        for plugin in plugins.available.clone() {
            self.use_plugin(&mut plugins, plugin);
        }
    }

    /// `__tgt_register_lib(desc)`: offer each device image to the available
    /// plugins in load order; the first that accepts it takes it for all its
    /// devices, and its ctors/dtors become pending on those devices.
    ///
    /// # Safety
    /// `desc` is null or a valid descriptor whose arrays stay valid until
    /// `unregister_lib(desc)`.
    pub unsafe fn register_lib(&self, desc: *mut BinDesc) {
        let _span =
            omptarget::profile::span(omptarget::profile::Kind::Registration, "register_lib");
        // SAFETY: our `# Safety`: `desc` is null (`None`) or a valid
        // descriptor; the reference lives only in this call.
        let Some(desc_ref) = (unsafe { desc.as_ref() }) else {
            return;
        };
        let desc_key = desc as usize;
        let entries_begin = desc_ref.host_entries_begin as usize;
        // SAFETY: our `# Safety`: `desc`'s host entry range is valid.
        let layout = unsafe { host_entries(desc_ref) }.layout;
        tracing::debug!(desc = desc_key, ?layout, "registering a library");
        self.registry
            .lock_tables()
            .registered_descs
            .insert(desc_key);

        // LLVM loads the plugins on the first registration, whatever it holds.
        self.load_plugins_once(&mut self.registry.write_plugins());
        // LLVM 19 and 22 initialise every device of a plugin that takes an
        // image at once; ours are initialised at their first use, which
        // only a tool can tell (`device_initialize`, `device_finalize`):
        // while one listens, a traced caller's devices start as LLVM's.
        let _ompt = self.ompt_call();
        let eager_init = self.tracer().is_some();
        for image_ptr in images(desc_ref) {
            // The runtime's copy first: plugins are offered the bare device
            // image with 32-byte entries, whatever the compiler's release
            // wrapped it in (`image_copy`, `entry_layout`).
            // SAFETY: our `# Safety`: `desc`'s image array is valid, so
            // `image_ptr` (in its bounds) is a valid device image of it.
            let fresh = Arc::new(unsafe { ImageCopy::new(image_ptr) });
            // Hold the device list only while choosing the plugins; the
            // table and pending-ctor locks are taken after it is released.
            let takers = {
                let mut plugins = self.registry.write_plugins();
                let accepting: Vec<usize> = plugins
                    .available
                    .iter()
                    .copied()
                    // SAFETY: the copy is a valid device image owning its
                    // bytes and entries, alive for this call.
                    .filter(|&p| unsafe { self.platform.is_valid_binary(p, fresh.device_image()) })
                    .collect();
                // LLVM's rule: the first plugin that accepts the image
                // takes it. Remote devices (the MPI plugin) run the same
                // images as a local plugin, so they take it too, after it.
                let mut takers: Vec<usize> = accepting.first().copied().into_iter().collect();
                takers.extend(
                    accepting
                        .iter()
                        .skip(1)
                        .copied()
                        .filter(|&p| self.platform.plugin_shares_images(p)),
                );
                takers
                    .into_iter()
                    .map(|p| self.use_plugin(&mut plugins, p))
                    .collect::<Vec<_>>()
            };
            let mut fresh = Some(fresh);
            for used in takers {
                let slots = &self.registry.devices.all()
                    [used.first_device..used.first_device + used.device_count];
                // The copy an earlier plugin's devices got, if any: every
                // device is handed (and asked about) the same copy.
                let image_copy = match self.registered_copy(entries_begin, image_ptr) {
                    Some(copy) => copy,
                    None => match fresh.take() {
                        Some(fresh) => fresh,
                        // SAFETY: as for the first copy.
                        None => Arc::new(unsafe { ImageCopy::new(image_ptr) }),
                    },
                };
                // Only the devices that can run it (LLVM 20+'s rule): a
                // plugin whose devices differ (remote devices served by
                // different plugins) says so per device.
                let runners: Vec<Arc<DeviceSlot>> = slots
                    .iter()
                    .filter(|slot| {
                        self.platform
                            .device(slot.plugin, slot.local)
                            .is_none_or(|d| {
                                // SAFETY: the copy is a valid device image
                                // owning its bytes and entries, alive here.
                                unsafe { d.can_run_image(image_copy.device_image()) }
                            })
                    })
                    .cloned()
                    .collect();
                if eager_init {
                    // As LLVM 20+: the devices that take the image.
                    for slot in &runners {
                        self.ready_device(slot.id.into());
                    }
                }
                // SAFETY: our `# Safety`: `desc` is valid with valid arrays, so
                // `image_ptr` is a valid image of it, and its host entry range.
                let copy = unsafe {
                    self.register_image(
                        desc_ref,
                        entries_begin,
                        used,
                        &runners,
                        image_ptr,
                        image_copy,
                    )
                };
                // SAFETY: the copy owns its (32-byte) entry range.
                unsafe { register_ctors_dtors(desc_key, &*copy.device_image(), &runners) };
            }
        }
    }

    /// The runtime's copy of `image` already in the translation table of
    /// the binary whose host entries start at `entries_begin`.
    fn registered_copy(
        &self,
        entries_begin: usize,
        image: *mut DeviceImage,
    ) -> Option<Arc<ImageCopy>> {
        let tables = self.registry.lock_tables();
        tables
            .by_entries_begin
            .get(&entries_begin)?
            .images
            .iter()
            .flatten()
            .find(|c| c.original() == image as usize)
            .cloned()
    }

    /// LLVM 19+'s `requires` entries (`REGISTER_REQUIRES`): clang 19 and 22
    /// pass the binary's `requires` flags in its entry table instead of
    /// calling `__tgt_register_requires`. Checked as that call is, before
    /// the images are registered (as LLVM 19's `registerLib` does).
    ///
    /// # Safety
    /// `desc` is null or a valid descriptor (as [`Offload::register_lib`]).
    pub unsafe fn register_lib_requires(&self, desc: *const BinDesc) -> Result<(), Fatal> {
        // SAFETY: our `# Safety`: null or a valid descriptor.
        let Some(desc) = (unsafe { desc.as_ref() }) else {
            return Ok(());
        };
        // SAFETY: our `# Safety`: its host entry range is valid.
        let table = unsafe { host_entries(desc) };
        // One registration per entry, in table order, as LLVM 19's
        // `registerLib` (so two disagreeing entries of one table are fatal).
        table
            .requires
            .iter()
            .try_for_each(|&flags| self.register_requires(flags))
    }

    /// LLVM's `RegisterImageIntoTranslationTable`, with the runtime's own
    /// copy of the image (made once per registered image).
    ///
    /// # Safety
    /// `desc`'s host entry range is valid, and `image` is a valid device
    /// image of a registered binary (as [`ImageCopy::new`] asks).
    unsafe fn register_image(
        &self,
        desc: &BinDesc,
        entries_begin: usize,
        used: UsedPlugin,
        runners: &[Arc<DeviceSlot>],
        image: *mut DeviceImage,
        fresh: Arc<ImageCopy>,
    ) -> Arc<ImageCopy> {
        let mut guard = self.registry.lock_tables();
        // One borrow of the tables, so that their fields borrow apart.
        let tables = &mut *guard;
        let table = match tables.by_entries_begin.entry(entries_begin) {
            std::collections::btree_map::Entry::Occupied(table) => table.into_mut(),
            std::collections::btree_map::Entry::Vacant(vacant) => {
                // SAFETY: our `# Safety`: `desc`'s host entry range is valid;
                // the slice is used only within this statement, under
                // `desc`'s borrow.
                let host_entries: Vec<HostEntry> = unsafe { host_entries(desc) }
                    .entries
                    .iter()
                    .map(|e| HostEntry {
                        addr: e.addr as usize,
                        size: e.size,
                        name: e.name as usize,
                    })
                    .collect();
                for (index, entry) in host_entries.iter().enumerate() {
                    tables
                        .host_index
                        .entry(entry.addr)
                        .or_default()
                        .insert(entries_begin, index as u32);
                }
                tables.registration_order.push(entries_begin);
                let serial = tables.next_serial;
                tables.next_serial += 1;
                vacant.insert(TranslationTable {
                    serial,
                    host_entries,
                    ..Default::default()
                })
            }
        };
        // The same image registered again keeps its copy (and what is
        // loaded from it).
        let copy = table
            .images
            .iter()
            .flatten()
            .find(|c| c.original() == image as usize)
            .cloned()
            .unwrap_or(fresh);
        table.ensure_devices(used.first_device + used.device_count);
        for device in runners.iter().map(|slot| slot.id as usize) {
            if !table.images[device]
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &copy))
            {
                table.images[device] = Some(copy.clone());
                table.targets[device] = None;
            }
        }
        copy
    }

    /// `__tgt_unregister_lib(desc)`: run the destructors of the binary on
    /// every device that ran its constructors, forget its translation table,
    /// and (beyond LLVM 14, whose images stay loaded) remove the mappings of
    /// its globals.
    ///
    /// # Safety
    /// `desc` is null or the descriptor passed to `register_lib`, still
    /// valid.
    pub unsafe fn unregister_lib(&self, desc: *mut BinDesc) {
        let _span =
            omptarget::profile::span(omptarget::profile::Kind::Registration, "unregister_lib");
        // SAFETY: our `# Safety` is `unregister_lib_then`'s.
        unsafe { self.unregister_lib_then(desc, true) }
    }

    /// `unregister_lib` right before the runtime's teardown (the main
    /// program's descriptor at exit): the images stay loaded, and the
    /// teardown unloads them in the fixed order, after draining the memory
    /// managers.
    ///
    /// # Safety
    /// As [`Offload::unregister_lib`].
    pub unsafe fn unregister_lib_before_teardown(&self, desc: *mut BinDesc) {
        let _span =
            omptarget::profile::span(omptarget::profile::Kind::Registration, "unregister_lib");
        // SAFETY: our `# Safety` (as `unregister_lib`) is
        // `unregister_lib_then`'s.
        unsafe { self.unregister_lib_then(desc, false) }
    }

    /// `unregister_lib`, unloading the binary's images when `unload_images`.
    ///
    /// # Safety
    /// As [`Offload::unregister_lib`]: `desc` is null or the descriptor
    /// passed to `register_lib`, still valid (with its arrays).
    unsafe fn unregister_lib_then(&self, desc: *mut BinDesc, unload_images: bool) {
        // SAFETY: our `# Safety`: `desc` is null (`None`) or a valid
        // descriptor; the reference lives only in this call.
        let Some(desc_ref) = (unsafe { desc.as_ref() }) else {
            return;
        };
        let desc_key = desc as usize;
        let used: Vec<UsedPlugin> = self.registry.read_plugins().used.clone();
        let entries_begin = desc_ref.host_entries_begin as usize;
        for image_ptr in images(desc_ref) {
            // Plugins know the runtime's copy (bare image, 32-byte entries),
            // never the library's own bytes.
            // Only a read: no new tables generation.
            let copy = self
                .registry
                .read_tables()
                .by_entries_begin
                .get(&entries_begin)
                .and_then(|t| {
                    t.images
                        .iter()
                        .flatten()
                        .find(|c| c.original() == image_ptr as usize)
                        .cloned()
                });
            let Some(copy) = copy else {
                continue;
            };
            // Every plugin that took the image (the first accepting one,
            // and remote ones after it: `register_lib`).
            let mut first = true;
            for plugin in used.iter().filter(|u| {
                // SAFETY: the copy is a valid device image owning its bytes
                // and entries, alive for this call.
                let accepts =
                    unsafe { self.platform.is_valid_binary(u.plugin, copy.device_image()) };
                let takes = accepts && (first || self.platform.plugin_shares_images(u.plugin));
                first &= !accepts;
                takes
            }) {
                for device in plugin.first_device..plugin.first_device + plugin.device_count {
                    // SAFETY: `run_dtors`'s `# Safety`: the lists under
                    // `desc_key` were recorded by `register_ctors_dtors` from
                    // this binary's image entries, and only there.
                    unsafe { self.run_dtors(device as i64, desc_key, copy.device_image()) };
                }
            }
        }

        let removed = {
            let mut tables = self.registry.lock_tables();
            // SAFETY: our `# Safety`: `desc`'s host entry range is valid; the
            // entries' names are not read.
            for entry in unsafe { host_entries(desc_ref) }.entries {
                let addr = entry.addr as usize;
                tables.host_cache.remove(&addr);
                if let Some(owners) = tables.host_index.get_mut(&addr) {
                    owners.remove(&entries_begin);
                    if owners.is_empty() {
                        tables.host_index.remove(&addr);
                    }
                }
            }
            tables.registered_descs.remove(&desc_key);
            let removed = tables.by_entries_begin.remove(&entries_begin);
            if removed.is_some() {
                tables.registration_order.retain(|&e| e != entries_begin);
            }
            removed
        };
        if let Some(table) = removed {
            let keep_for_dumps = self.registry.info_enabled(INFO_DUMP_TABLE);
            for &(device, host, target) in &table.globals {
                if let Some(dev) = self.device(device as i64) {
                    let removed = dev.ops.mappings().remove_global(host, target);
                    if let (Some(entry), true) = (removed, keep_for_dumps) {
                        self.registry.record_unloaded_global(device, entry);
                    }
                }
            }
            // Beyond LLVM 14 (which keeps them until exit): unload the
            // binary's images now. A program that dlopens and dlcloses an
            // offload library in a loop would otherwise pile up one loaded
            // copy per cycle. Right before the teardown they stay: it
            // unloads them in the fixed order. No lock of ours is held
            // here (unload_binary may dlclose); a load of this binary still
            // in flight on another thread finds its table gone when it
            // publishes, and unloads its own copy (`super::load`).
            if !unload_images {
                return;
            }
            for (device, image) in &table.loaded {
                if let Some(dev) = self.device(*device as i64) {
                    // SAFETY: `table.loaded` holds the images loaded on
                    // `device` by `load_binary`; removed from the table
                    // above, each is unloaded once, here.
                    if let Err(err) = unsafe { dev.ops.unload_binary(image.device_image()) } {
                        tracing::debug!(device, error = %err, "unloading an unregistered image failed");
                    }
                }
            }
        }
    }

    /// Run a binary's destructors on one device if its constructors ran
    /// there (LLVM: the pending ctor list is empty), then forget its lists.
    /// How many ran and failed is noted on `image` (the runtime's copy
    /// loaded on the device) for the shutdown report.
    /// Unlike LLVM 14, the lists go even when the constructors never ran:
    /// they are the code of a binary being unloaded, never to be run.
    ///
    /// # Safety
    /// The destructor lists under `desc_key` are entry addresses of the
    /// binary's images (as `register_ctors_dtors` records them), so
    /// `run_target` runs them as loaded kernels taking no arguments.
    unsafe fn run_dtors(&self, device: i64, desc_key: usize, image: *mut DeviceImage) {
        let Some(dev) = self.device(device) else {
            return;
        };
        let mut pending = dev.slot.lock_pending();
        let Some(lists) = pending.libs.remove(&desc_key) else {
            return;
        };
        if lists.ctors.is_empty() && !lists.dtors.is_empty() {
            let dtors: Vec<usize> = lists.dtors.iter().copied().collect();
            let (mut ran, mut failed) = (0, 0);
            for dtor in dtors {
                // LLVM would run the destructor of a device that never
                // loaded the image (and crash); skip it instead.
                if !self.entry_loaded(&dev, dtor) {
                    continue;
                }
                // Failures are debug output only in LLVM.
                // SAFETY: `dtor` is a destructor entry of a binary's image
                // (our `# Safety`), loaded on `dev` (checked just above),
                // run with no arguments as LLVM does.
                let result = {
                    let launch = super::region::KernelLaunch::legacy(1, 1, true);
                    let no_args = super::MapArgs::empty();
                    // SAFETY: see above: a kernel without arguments.
                    let region = unsafe {
                        super::region::TargetRegion::new(
                            dtor as *mut std::ffi::c_void,
                            &no_args,
                            &launch,
                        )
                    };
                    self.run_target(&dev, region)
                };
                match result {
                    Ok(_) => ran += 1,
                    Err(_) => failed += 1,
                }
            }
            dev.ops.note_dtor_kernels(image, ran, failed);
        }
        drop(pending);
    }
}

/// LLVM's `RegisterGlobalCtorsDtorsForImage`.
///
/// # Safety
/// `image`'s entry range is valid.
unsafe fn register_ctors_dtors(desc_key: usize, image: &DeviceImage, slots: &[Arc<DeviceSlot>]) {
    // SAFETY: our `# Safety`: `image`'s entry range is valid; the slice
    // lives only in this call, under the borrow of `image`.
    let image_entries = unsafe { entries(image.entries_begin, image.entries_end) };
    for slot in slots {
        let mut pending = slot.lock_pending();
        slot.mark_pending(&mut pending);
        let lists = pending.libs.entry(desc_key).or_default();
        for entry in image_entries {
            if entry.flags & declare_target::CTOR != 0 {
                lists.ctors.push(entry.addr as usize);
            } else if entry.flags & declare_target::DTOR != 0 {
                lists.dtors.push_front(entry.addr as usize);
            }
        }
    }
}
