//! The state LLVM's `PluginManager` keeps besides plugins and devices:
//! requires flags, the offload policy, which plugins are in use and how
//! their devices are numbered, the translation tables of registered host
//! binaries, and per-device pending constructors and loop trip counts.
//!
//! The shim holds one [`Registry`] next to the `Runtime` (it is plain data;
//! the plugins and devices stay the runtime's). Operations on it are
//! methods of [`super::Offload`], which pairs it with the runtime.
//!
//! Lock order (never the reverse): device list (`plugins`) -> `policy`;
//! a device's `pending` -> `tables`; a mapping table's entries -> an
//! entry's data-movement lock; shadow pointers -> entries. Plugin calls
//! are made holding at most `pending` and `tables` (image loads, ctors), as
//! LLVM does.

use super::policy::TargetOffloadPolicy;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Registration state of one runtime. Internally synchronised.
#[derive(Debug, Default)]
pub struct Registry {
    pub(crate) requires: Mutex<i64>,
    pub(crate) policy: Mutex<TargetOffloadPolicy>,
    pub(crate) plugins: RwLock<Plugins>,
    pub(crate) tables: Mutex<Tables>,
    info_level: AtomicU32,
    debug_level: AtomicU32,
}

/// Which plugins are loaded and used, and the devices of the used ones.
#[derive(Debug, Default)]
pub(crate) struct Plugins {
    /// LLVM's `LoadRTLs` ran (on the first `register_lib`).
    pub loaded: bool,
    /// Plugins with at least one device (LLVM's `AllRTLs`); empty when
    /// offloading is disabled.
    pub available: Vec<usize>,
    /// Plugins that took an image, in that order (LLVM's `UsedRTLs`).
    pub used: Vec<UsedPlugin>,
    /// Devices of the used plugins: OpenMP device number = index.
    pub devices: Vec<Arc<DeviceSlot>>,
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
    pub pending: Mutex<PendingGlobals>,
    /// Loop trip counts pushed per host thread (`__kmpc_push_target_tripcount`).
    pub tripcounts: Mutex<HashMap<i32, u64>>,
}

impl DeviceSlot {
    pub fn new(id: i32, plugin: usize, local: usize) -> Self {
        DeviceSlot {
            id,
            plugin,
            local,
            init: OnceLock::new(),
            pending: Mutex::new(PendingGlobals::default()),
            tripcounts: Mutex::new(HashMap::new()),
        }
    }

    pub fn lock_pending(&self) -> MutexGuard<'_, PendingGlobals> {
        lock(&self.pending)
    }
}

/// Images not yet loaded on a device and its pending ctors/dtors.
#[derive(Debug, Default)]
pub(crate) struct PendingGlobals {
    pub has_pending: bool,
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
    pub host_entries: Vec<HostEntry>,
    /// Image registered for each device number (0: none).
    pub images: Vec<usize>,
    /// Target table loaded on each device number.
    pub targets: Vec<Option<Arc<Vec<TargetEntry>>>>,
    /// Globals this binary mapped: (device, host address, device address).
    pub globals: Vec<(i32, usize, usize)>,
}

impl TranslationTable {
    pub fn image(&self, device: usize) -> usize {
        self.images.get(device).copied().unwrap_or(0)
    }
    pub fn target(&self, device: usize) -> Option<Arc<Vec<TargetEntry>>> {
        self.targets.get(device).cloned().flatten()
    }
    pub fn ensure_devices(&mut self, count: usize) {
        if self.images.len() < count {
            self.images.resize(count, 0);
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
    pub host_index: HashMap<usize, BTreeMap<usize, u32>>,
    /// Host entry address -> resolution made (LLVM's `HostPtrToTableMap`).
    pub host_cache: HashMap<usize, (usize, u32)>,
    /// Descriptors registered and not yet unregistered.
    pub registered_descs: BTreeSet<usize>,
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
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent between statements;
    // a panic elsewhere must not make the runtime unusable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Registry {
    /// An empty registry: nothing registered, requires flags undefined,
    /// policy `Default` until the first registration reads it.
    pub fn new() -> Self {
        Self::default()
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

    pub(crate) fn lock_tables(&self) -> MutexGuard<'_, Tables> {
        lock(&self.tables)
    }

    /// `omp_get_num_devices()`: devices of the plugins in use.
    pub fn num_devices(&self) -> i32 {
        self.read_plugins().devices.len() as i32
    }

    /// `omp_get_initial_device()`: the host's device number.
    pub fn initial_device(&self) -> i32 {
        self.num_devices()
    }

    /// The requires flags registered so far (0: undefined).
    pub fn requires_flags(&self) -> i64 {
        *lock(&self.requires)
    }

    /// `requires unified_shared_memory` is in effect.
    pub fn unified_shared_memory(&self) -> bool {
        self.requires_flags() & crate::abi::requires::UNIFIED_SHARED_MEMORY != 0
    }

    /// The offload policy now (it changes from `Default` once decided).
    pub fn policy(&self) -> TargetOffloadPolicy {
        *lock(&self.policy)
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

    /// Is INFO output of this kind on?
    pub fn info_enabled(&self, kind: u32) -> bool {
        self.debug_level.load(Ordering::Relaxed) == 0 && self.info_level() & kind != 0
    }

    /// Number of host binaries registered and not unregistered (the shim
    /// shuts the runtime down when this drops to zero).
    pub fn registered_libs(&self) -> usize {
        self.lock_tables().registered_descs.len()
    }

    /// (plugin, local device) of each OpenMP device number, in order.
    pub fn device_map(&self) -> Vec<(usize, usize)> {
        self.read_plugins()
            .devices
            .iter()
            .map(|d| (d.plugin, d.local))
            .collect()
    }

    /// The slot of an OpenMP device number.
    pub(crate) fn slot(&self, device: i64) -> Option<Arc<DeviceSlot>> {
        let index = usize::try_from(device).ok()?;
        self.read_plugins().devices.get(index).cloned()
    }
}
