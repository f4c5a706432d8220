//! The state LLVM's `PluginManager` keeps besides plugins and devices:
//! requires flags, the offload policy, which plugins are in use and how
//! their devices are numbered, the translation tables of registered host
//! binaries, and per-device pending constructors and loop trip counts.
//!
//! The shim holds one [`Registry`] next to the `Runtime` (it is plain data;
//! the plugins and devices stay the runtime's). Operations on it are
//! methods of [`super::Offload`], which pairs it with the runtime.
//!
//! The per-call path takes no lock of the registry: a region's entry comes
//! from the thread's cache of its last launch while the tables' generation
//! is unchanged (else from `tables`, once), requires flags and policy are atomics, device
//! slots a `DeviceTable` read without a lock, and a device's pending
//! ctors are checked with an atomic flag before `pending` is locked.
//!
//! Lock order (never the reverse): plugin list (`plugins`) -> device table
//! snapshots; a device's `pending` -> `tables`; a mapping table's entries -> an
//! entry's data-movement lock; shadow pointers -> entries. Every one of them
//! is short, and none is held across `load_binary`/`unload_binary` or any
//! other call that may take the dynamic loader's lock (see `docs/lifecycle.md`,
//! "Lock order and the dynamic loader"): clang's library constructors and
//! destructors call `__tgt_register_lib`/`__tgt_unregister_lib` holding
//! that lock, and take ours after it. The one exception is `pending`, held
//! across a device's constructor and destructor kernels (as LLVM holds it).

use super::device_table::DeviceTable;
use super::image_copy::ImageCopy;
use super::in_flight::InFlight;
use super::lock::lock;
use super::policy::TargetOffloadPolicy;
use super::ptr_hash::PtrMap;
use omptarget::mapping::MappedEntry;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ffi::CString;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The generation of every registry's tables: moved on at the end of each
/// [`Registry::lock_tables`]. Process-wide and never reused, so a cached
/// entry can name neither a changed table nor a registry that was dropped
/// and whose address a new one took (the new one's first registration
/// moves it on). 0 is never a generation: the empty cache matches nothing.
static TABLES_GENERATION: AtomicU64 = AtomicU64::new(1);

/// What identifies a cached launch entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LaunchKey {
    registry: usize,
    host_ptr: usize,
    device: usize,
    generation: u64,
}

#[derive(Debug, Clone, Copy)]
struct CachedLaunch {
    key: LaunchKey,
    entry: TargetEntry,
}

thread_local! {
    /// The last region this thread launched: constant-initialised, plain
    /// data, no destructor (no exit-time code).
    static LAST_LAUNCH: std::cell::Cell<CachedLaunch> = const {
        std::cell::Cell::new(CachedLaunch {
            key: LaunchKey { registry: 0, host_ptr: 0, device: 0, generation: 0 },
            entry: TargetEntry { addr: 0, size: 0 },
        })
    };
}

/// The tables locked by [`Registry::lock_tables`]; dropping it moves the
/// generation on while the lock is still held (the field drops after).
pub(crate) struct TablesGuard<'r>(MutexGuard<'r, Tables>);

impl std::ops::Deref for TablesGuard<'_> {
    type Target = Tables;
    fn deref(&self) -> &Tables {
        &self.0
    }
}

impl std::ops::DerefMut for TablesGuard<'_> {
    fn deref_mut(&mut self) -> &mut Tables {
        &mut self.0
    }
}

impl Drop for TablesGuard<'_> {
    fn drop(&mut self) {
        TABLES_GENERATION.fetch_add(1, Ordering::AcqRel);
    }
}

/// Registration state of one runtime. Internally synchronised.
#[derive(Debug)]
pub struct Registry {
    /// `__tgt_register_requires` flags (0: undefined); set once.
    pub(crate) requires: AtomicI64,
    /// A `TargetOffloadPolicy` as `i32`; see [`Registry::policy`].
    policy: AtomicI32,
    /// Cold: which plugins are loaded and used (registration only).
    pub(crate) plugins: RwLock<Plugins>,
    /// Devices of the used plugins: OpenMP device number = index.
    pub(crate) devices: DeviceTable<DeviceSlot>,
    pub(crate) tables: Mutex<Tables>,
    info_level: AtomicU32,
    debug_level: AtomicU32,
    /// Mappings of globals of unregistered binaries, by device: LLVM 14
    /// never removes them, so its table dumps (`LIBOMPTARGET_INFO` bit 4,
    /// after each region and at exit) still list them; ours removes them at
    /// unregistration (a later library may reuse the addresses). Kept only
    /// while the dump-table bit is on, for the dumps alone.
    unloaded_globals: Mutex<Vec<(i32, MappedEntry)>>,
    /// Copies of the symbol names LLVM 15+ give global mappings (their
    /// `HstPtrName`), one per distinct name: a mapping may outlive its
    /// binary (`unloaded_globals`), and LLVM's pointer into the unloaded
    /// binary then dangles (its dump crashes). A `CString`'s bytes do not
    /// move when the set does, so the pointers stay valid as long as the
    /// registry; interned, so a library loaded in a loop adds nothing.
    global_names: Mutex<BTreeSet<CString>>,
    /// Host blocks handed out for a device number while there was no
    /// device (see the module).
    pub(crate) early_host_blocks: super::host_blocks::EarlyHostBlocks,
    /// The OMPT tool's callbacks ([`super::ompt`]): the process's one
    /// table, which libomp may finalize at any point of the exit, so it
    /// outlives the registry.
    ompt: &'static super::ompt::Ompt,
}

/// The table of a registry nobody connected to a tool: never active.
static NO_TOOL: super::ompt::Ompt = super::ompt::Ompt::new();

/// Which plugins are loaded and used, and the devices of the used ones.
#[derive(Debug, Default)]
pub(crate) struct Plugins {
    /// LLVM's `LoadRTLs` ran (on the first `register_lib`).
    pub loaded: bool,
    /// Plugins with at least one device (LLVM's `AllRTLs`); empty when
    /// offloading is disabled.
    pub available: Vec<usize>,
    /// Plugins that took an image, in that order (LLVM's `UsedRTLs`); their
    /// devices are in [`Registry::devices`].
    pub used: Vec<UsedPlugin>,
}

/// A used plugin and the device numbers it owns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UsedPlugin {
    pub plugin: usize,
    pub first_device: usize,
    pub device_count: usize,
}

/// Per-device state of the offload layer.
#[derive(Debug)]
pub(crate) struct DeviceSlot {
    /// OpenMP device number.
    pub id: i32,
    pub plugin: usize,
    pub local: usize,
    /// Result of the one initialisation attempt (LLVM's `initOnce`).
    pub init: OnceLock<bool>,
    /// Images to load or ctors to run (LLVM's `HasPendingGlobals`): set
    /// and cleared holding `pending`, read without it first.
    pub has_pending: AtomicBool,
    /// How many registrations made this device's state pending (bumped
    /// with `has_pending`, holding `pending`): image loading holds no lock,
    /// so `init_library` checks that none came in while it loaded.
    pub registrations: AtomicU64,
    pub pending: Mutex<PendingGlobals>,
    /// Image loads in flight on the device (no lock held while loading).
    pub loads: InFlight,
    /// Loop trip counts pushed per host thread (`__kmpc_push_target_tripcount`).
    pub tripcounts: Mutex<PtrMap<i32, u64>>,
    /// `tripcounts.len()`, stored holding `tripcounts`: a launch with no
    /// trip count pushed on any thread skips the lock.
    pub tripcount_entries: AtomicUsize,
    /// `omp_get_uid_from_device`'s string, made at its first call; it
    /// lives as long as the slot, as the pointer handed out must.
    pub uid: OnceLock<CString>,
}

impl DeviceSlot {
    pub fn new(id: i32, plugin: usize, local: usize) -> Self {
        DeviceSlot {
            id,
            plugin,
            local,
            init: OnceLock::new(),
            has_pending: AtomicBool::new(false),
            registrations: AtomicU64::new(0),
            pending: Mutex::new(PendingGlobals::default()),
            loads: InFlight::default(),
            tripcounts: Mutex::new(PtrMap::default()),
            tripcount_entries: AtomicUsize::new(0),
            uid: OnceLock::new(),
        }
    }

    pub fn lock_pending(&self) -> MutexGuard<'_, PendingGlobals> {
        lock(&self.pending)
    }

    /// Does the device have images to load or ctors to run? (No lock.)
    pub fn has_pending(&self) -> bool {
        self.has_pending.load(Ordering::Acquire)
    }

    /// How many registrations made the device pending so far.
    pub fn registrations(&self) -> u64 {
        self.registrations.load(Ordering::Acquire)
    }

    /// A registration gave the device images to load (and maybe ctors):
    /// called holding `pending`.
    pub fn mark_pending(&self, _pending: &mut PendingGlobals) {
        self.registrations.fetch_add(1, Ordering::AcqRel);
        self.has_pending.store(true, Ordering::Release);
    }

    /// Record this thread's trip count for its next launch (the first push
    /// wins until taken, as LLVM's `insert`).
    pub fn push_tripcount(&self, thread: i32, count: u64) {
        let mut counts = lock(&self.tripcounts);
        counts.entry(thread).or_insert(count);
        self.tripcount_entries
            .store(counts.len(), Ordering::Release);
    }

    /// Take this thread's trip count (0 if none). A thread always sees its
    /// own push: it stored a count >= 1 before, and any later store was
    /// made holding the lock after that push, so counted it.
    pub fn take_tripcount(&self, thread: i32) -> u64 {
        if self.tripcount_entries.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let mut counts = lock(&self.tripcounts);
        let count = counts.remove(&thread).unwrap_or(0);
        self.tripcount_entries
            .store(counts.len(), Ordering::Release);
        count
    }
}

/// Images not yet loaded on a device and its pending ctors/dtors.
#[derive(Debug, Default)]
pub(crate) struct PendingGlobals {
    /// By `__tgt_bin_desc` address (LLVM's `std::map` order).
    pub libs: BTreeMap<usize, CtorsDtors>,
}

/// Constructors still to run and destructors to run at unregistration.
#[derive(Debug, Default)]
pub(crate) struct CtorsDtors {
    pub ctors: Vec<usize>,
    pub dtors: VecDeque<usize>,
}

/// An entry of a host table (copied at registration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostEntry {
    pub addr: usize,
    pub size: usize,
    /// The symbol name (a NUL-terminated string of the registered binary,
    /// valid while it is registered).
    pub name: usize,
}

/// An entry of a target table as loaded on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TargetEntry {
    pub addr: usize,
    pub size: usize,
}

/// LLVM's `TranslationTable`: one per registered host binary.
#[derive(Debug, Default)]
pub(crate) struct TranslationTable {
    /// Unique per registration in this registry: a binary registered again
    /// at the same host address (dlclose, then dlopen) gets a new table
    /// with a new serial, so a load started for the old one never publishes
    /// into the new one.
    pub serial: u64,
    pub host_entries: Vec<HostEntry>,
    /// Image registered for each device number (the runtime's copy).
    pub images: Vec<Option<Arc<ImageCopy>>>,
    /// Target table loaded on each device number.
    pub targets: Vec<Option<Arc<Vec<TargetEntry>>>>,
    /// Every copy of an image loaded for this table and not unloaded:
    /// (device number, image). Two threads may load the same image on the
    /// same device at once (loading holds no lock); one publishes its
    /// target table, and the other's copy stays loaded, unused, until the
    /// unregistration unloads both. Unloading it at once could unload the
    /// published one: `unload_binary` names an image only by its address.
    pub loaded: Vec<(usize, Arc<ImageCopy>)>,
    /// Globals this binary mapped: (device, host address, device address).
    pub globals: Vec<(i32, usize, usize)>,
}

impl TranslationTable {
    pub fn image(&self, device: usize) -> Option<Arc<ImageCopy>> {
        self.images.get(device).cloned().flatten()
    }
    pub fn target(&self, device: usize) -> Option<Arc<Vec<TargetEntry>>> {
        self.targets.get(device).cloned().flatten()
    }
    pub fn ensure_devices(&mut self, count: usize) {
        if self.images.len() < count {
            self.images.resize(count, None);
            self.targets.resize(count, None);
        }
    }
}

/// The translation tables and the host entry index.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    /// By host entries begin address (LLVM's key).
    pub by_entries_begin: BTreeMap<usize, TranslationTable>,
    /// Host entries begin addresses in first registration order.
    pub registration_order: Vec<usize>,
    /// Host entry address -> (entries begin, index), for every table;
    /// several tables may hold one address (LLVM takes the lowest key).
    pub host_index: PtrMap<usize, BTreeMap<usize, u32>>,
    /// Host entry address -> resolution made (LLVM's `HostPtrToTableMap`).
    pub host_cache: PtrMap<usize, (usize, u32)>,
    /// Descriptors registered and not yet unregistered.
    pub registered_descs: BTreeSet<usize>,
    /// The serial of the next table registered.
    pub next_serial: u64,
}

impl Tables {
    /// LLVM's `getTableMap`: (entries begin, index) of a host entry address.
    pub fn resolve_host_ptr(&mut self, host_ptr: usize) -> Option<(usize, u32)> {
        if let Some(&hit) = self.host_cache.get(&host_ptr) {
            return Some(hit);
        }
        let (&begin, &index) = self.host_index.get(&host_ptr)?.iter().next()?;
        self.host_cache.insert(host_ptr, (begin, index));
        Some((begin, index))
    }

    /// The device entry of host entry `host_ptr` on `device` (LLVM's
    /// `getTableMap`, then the target table); the launch path asks
    /// [`Registry::target_entry`], which caches it per thread.
    pub fn target_entry(
        &mut self,
        host_ptr: usize,
        device: usize,
    ) -> Result<TargetEntry, MissingEntry> {
        let (entries_begin, index) = self
            .resolve_host_ptr(host_ptr)
            .ok_or(MissingEntry::NoHostEntry)?;
        self.by_entries_begin
            .get(&entries_begin)
            .and_then(|t| {
                t.targets
                    .get(device)?
                    .as_ref()?
                    .get(index as usize)
                    .copied()
            })
            .ok_or(MissingEntry::NoTargetTable)
    }
}

/// Why [`Tables::target_entry`] found no device entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MissingEntry {
    /// No registered binary has this host entry.
    NoHostEntry,
    /// Its binary has no target table on the device (or it is too short).
    NoTargetTable,
}

impl Registry {
    /// An empty registry: nothing registered, requires flags undefined,
    /// policy `Default` until the first registration reads it.
    pub fn new() -> Self {
        Registry {
            requires: AtomicI64::new(omptarget::abi::requires::UNDEFINED),
            policy: AtomicI32::new(TargetOffloadPolicy::Default as i32),
            plugins: RwLock::default(),
            devices: DeviceTable::default(),
            tables: Mutex::default(),
            info_level: AtomicU32::new(0),
            debug_level: AtomicU32::new(0),
            unloaded_globals: Mutex::default(),
            global_names: Mutex::default(),
            early_host_blocks: Default::default(),
            ompt: &NO_TOOL,
        }
    }

    /// An empty registry whose OMPT callbacks are `ompt`'s (the shim's
    /// process-wide table).
    pub fn with_ompt(ompt: &'static super::ompt::Ompt) -> Self {
        Registry {
            ompt,
            ..Registry::new()
        }
    }

    /// The OMPT tool's callbacks.
    #[inline]
    pub fn ompt(&self) -> &'static super::ompt::Ompt {
        self.ompt
    }

    pub(crate) fn read_plugins(&self) -> RwLockReadGuard<'_, Plugins> {
        self.plugins
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn write_plugins(&self) -> RwLockWriteGuard<'_, Plugins> {
        self.plugins
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The tables, to read or change. Every such lock ends by moving the
    /// tables' generation on (see [`TablesGuard`]), so the threads' cached
    /// launch entries are dropped; the launch path itself reads through
    /// [`Registry::target_entry`].
    pub(crate) fn lock_tables(&self) -> TablesGuard<'_> {
        TablesGuard(lock(&self.tables))
    }

    /// The tables, only to read them: no new generation. (A lookup may
    /// fill the host-entry memo `host_cache`, which stores the answer the
    /// lookup gives anyway, so no cached launch entry can change by it.)
    pub(crate) fn read_tables(&self) -> MutexGuard<'_, Tables> {
        lock(&self.tables)
    }

    /// The device entry of host entry `host_ptr` on `device`, for a launch.
    /// A thread launching the same region again finds it in its own cache,
    /// valid while the tables' generation is unchanged: no lock, no write
    /// to memory another thread uses. Only a miss locks the tables.
    ///
    /// A hit is what the locked lookup would have answered when the
    /// generation was read: the same as an answer under the lock that a
    /// concurrent unregistration makes stale before the kernel starts.
    pub(crate) fn target_entry(
        &self,
        host_ptr: usize,
        device: usize,
    ) -> Result<TargetEntry, MissingEntry> {
        let key = LaunchKey {
            registry: self as *const Registry as usize,
            host_ptr,
            device,
            generation: TABLES_GENERATION.load(Ordering::Acquire),
        };
        if let Some(entry) = LAST_LAUNCH.with(|last| {
            let last = last.get();
            (last.key == key).then_some(last.entry)
        }) {
            return Ok(entry);
        }
        let entry = self.read_tables().target_entry(host_ptr, device)?;
        LAST_LAUNCH.with(|last| last.set(CachedLaunch { key, entry }));
        Ok(entry)
    }

    /// The symbol name of the host entry at `host_ptr` (a region's kernel),
    /// for the plugin's launch INFO line; `None` if no registered binary
    /// has it. Cold: looked up only when that line is printed.
    pub(crate) fn host_entry_name(&self, host_ptr: usize) -> Option<String> {
        let mut tables = self.read_tables();
        let (entries_begin, index) = tables.resolve_host_ptr(host_ptr)?;
        let entry = tables
            .by_entries_begin
            .get(&entries_begin)?
            .host_entries
            .get(index as usize)?;
        if entry.name == 0 {
            return None;
        }
        // SAFETY: the binary is registered (its table is in `tables`, held
        // read-locked), so its entry's name is its live NUL-terminated
        // symbol name.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.name as *const std::ffi::c_char) };
        Some(name.to_string_lossy().into_owned())
    }

    /// `omp_get_num_devices()`: devices of the plugins in use.
    pub fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    /// `omp_get_initial_device()`: the host's device number.
    pub fn initial_device(&self) -> i32 {
        self.num_devices()
    }

    /// The requires flags registered so far (0: undefined).
    pub fn requires_flags(&self) -> i64 {
        self.requires.load(Ordering::Acquire)
    }

    /// `requires unified_shared_memory` is in effect.
    pub fn unified_shared_memory(&self) -> bool {
        self.requires_flags() & omptarget::abi::requires::UNIFIED_SHARED_MEMORY != 0
    }

    /// The offload policy now (it changes from `Default` once decided).
    pub fn policy(&self) -> TargetOffloadPolicy {
        TargetOffloadPolicy::from_kmp(self.policy.load(Ordering::Acquire))
    }

    /// Set the policy (LLVM's `LoadRTLs` reads `OMP_TARGET_OFFLOAD`).
    pub(crate) fn set_policy(&self, policy: TargetOffloadPolicy) {
        self.policy.store(policy as i32, Ordering::Release);
    }

    /// Turn a `Default` policy into `decided`, once (LLVM's
    /// `isOffloadDisabled`); returns the policy in effect afterwards,
    /// whichever thread decided it.
    pub(crate) fn decide_default_policy(
        &self,
        decided: TargetOffloadPolicy,
    ) -> TargetOffloadPolicy {
        match self.policy.compare_exchange(
            TargetOffloadPolicy::Default as i32,
            decided as i32,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => decided,
            Err(current) => TargetOffloadPolicy::from_kmp(current),
        }
    }

    /// `LIBOMPTARGET_INFO` / `__tgt_set_info_flag`.
    pub fn set_info_level(&self, level: u32) {
        self.info_level.store(level, Ordering::Relaxed);
    }

    /// The info level.
    pub fn info_level(&self) -> u32 {
        self.info_level.load(Ordering::Relaxed)
    }

    /// `LIBOMPTARGET_DEBUG`: a release LLVM prints no debug output, and
    /// none of its INFO lines either when this is non-zero.
    pub fn set_debug_level(&self, level: u32) {
        self.debug_level.store(level, Ordering::Relaxed);
    }

    /// Remember the mapping of an unregistered binary's global for the
    /// table dumps (see `unloaded_globals`).
    pub(crate) fn record_unloaded_global(&self, device: i32, entry: MappedEntry) {
        lock(&self.unloaded_globals).push((device, entry));
    }

    /// A copy of the NUL-terminated `name` that lives as long as the
    /// registry, as a `map_var_info_t` address (0 for a null `name`).
    ///
    /// # Safety
    /// `name` is 0 or the address of a NUL-terminated string.
    pub(crate) unsafe fn intern_global_name(&self, name: usize) -> usize {
        if name == 0 {
            return 0;
        }
        // SAFETY: our `# Safety`: a NUL-terminated string.
        let text = unsafe { std::ffi::CStr::from_ptr(name as *const std::ffi::c_char) };
        let mut names = lock(&self.global_names);
        if let Some(kept) = names.get(text) {
            return kept.as_ptr() as usize;
        }
        let kept = text.to_owned();
        let address = kept.as_ptr() as usize;
        names.insert(kept);
        address
    }

    /// The unloaded globals' mappings on `device`.
    pub(crate) fn unloaded_globals(&self, device: i32) -> Vec<MappedEntry> {
        lock(&self.unloaded_globals)
            .iter()
            .filter(|(d, _)| *d == device)
            .map(|(_, e)| *e)
            .collect()
    }

    /// Is INFO output of this kind on?
    pub fn info_enabled(&self, kind: u32) -> bool {
        self.debug_level.load(Ordering::Relaxed) == 0 && self.info_level() & kind != 0
    }

    /// Number of host binaries registered and not unregistered (the shim
    /// shuts the runtime down when this drops to zero).
    pub fn registered_libs(&self) -> usize {
        self.read_tables().registered_descs.len()
    }

    /// Is the descriptor at `desc` registered?
    pub fn is_registered(&self, desc: usize) -> bool {
        self.read_tables().registered_descs.contains(&desc)
    }

    /// (plugin, local device) of each OpenMP device number, in order.
    pub fn device_map(&self) -> Vec<(usize, usize)> {
        self.devices
            .all()
            .iter()
            .map(|d| (d.plugin, d.local))
            .collect()
    }

    /// The slot of an OpenMP device number.
    pub(crate) fn slot(&self, device: i64) -> Option<&DeviceSlot> {
        let index = usize::try_from(device).ok()?;
        self.devices.get(index)
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}
