//! The runtime's devices, each created on its first use.
//!
//! A plugin may report many devices (the loader accepts up to 2^16); a
//! [`Device`] holds its memory manager's sharded tables and a mapping table,
//! a few kilobytes, so building every one up front would spend hundreds of
//! megabytes on devices a program never touches. The table keeps one
//! lazily allocated chunk of [`CHUNK`] slots per [`CHUNK`] device numbers:
//! before any use it costs one empty cell per chunk, and a device is built
//! the first time something asks for it by number. Slots are never emptied
//! until the table drops, so a `&Device` lives as long as the table.

use super::Device;
use crate::plugin::Plugin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Device numbers per lazily allocated chunk.
const CHUNK: usize = 64;

/// The next table's runtime number (a plain atomic: no destructor).
static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

type Chunk = [OnceLock<Box<Device>>; CHUNK];

/// Which plugin serves a range of device numbers.
struct PluginRange {
    first: usize,
    count: usize,
    plugin: Arc<Plugin>,
}

pub(crate) struct DeviceTable {
    count: usize,
    ranges: Vec<PluginRange>,
    chunks: Box<[OnceLock<Box<Chunk>>]>,
    memory_manager_threshold: usize,
    /// What the devices' allocations record about where they were made.
    origins: crate::origin::OriginCapture,
    /// This runtime's number, unique in the process, given to its devices.
    runtime: u64,
}

impl DeviceTable {
    /// Number the devices of `plugins` in order (nothing is built yet).
    pub(crate) fn new(plugins: &[Arc<Plugin>], memory_manager_threshold: usize) -> Self {
        let mut ranges = Vec::with_capacity(plugins.len());
        let mut count = 0;
        for plugin in plugins {
            ranges.push(PluginRange {
                first: count,
                count: plugin.device_count(),
                plugin: plugin.clone(),
            });
            count += plugin.device_count();
        }
        let chunks = (0..count.div_ceil(CHUNK))
            .map(|_| OnceLock::new())
            .collect();
        DeviceTable {
            count,
            ranges,
            chunks,
            memory_manager_threshold,
            origins: Default::default(),
            runtime: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Devices built from now on record `origins` for their allocations.
    pub(crate) fn with_alloc_origins(mut self, origins: crate::origin::OriginCapture) -> Self {
        self.origins = origins;
        self
    }

    /// The number of devices.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Device `id`, built now if this is its first use.
    #[inline]
    pub(crate) fn get(&self, id: usize) -> Option<&Device> {
        // Every device operation of the OpenMP layer looks its device up
        // here: a device already built takes two loads and no call, and
        // nothing of the building is inlined (it would make every caller
        // save registers for a path taken once per device).
        let chunk = self.chunks.get(id / CHUNK)?.get();
        if let Some(device) = chunk.and_then(|chunk| chunk.get(id % CHUNK)?.get()) {
            return Some(device);
        }
        self.get_or_build(id)
    }

    #[cold]
    #[inline(never)]
    fn get_or_build(&self, id: usize) -> Option<&Device> {
        if id >= self.count {
            return None;
        }
        let chunk = self.chunks[id / CHUNK]
            .get_or_init(|| Box::new(std::array::from_fn(|_| OnceLock::new())));
        Some(chunk[id % CHUNK].get_or_init(|| Box::new(self.build(id))))
    }

    /// Device `local` (the plugin's own number) of the plugin at `index`
    /// (load order): the plugin's range is kept here, so the lookup reads
    /// no `Plugin`.
    #[inline]
    pub(crate) fn plugin_device(&self, index: usize, local: usize) -> Option<&Device> {
        let range = self.ranges.get(index)?;
        if local >= range.count {
            return None;
        }
        self.get(range.first + local)
    }

    fn build(&self, id: usize) -> Device {
        let range = self
            .ranges
            .iter()
            .find(|r| id >= r.first && id < r.first + r.count)
            .expect("every device number below the count has a plugin");
        let local = i32::try_from(id - range.first).expect("device count came from an i32");
        Device::new(
            id,
            range.plugin.clone(),
            local,
            self.memory_manager_threshold,
            self.origins,
            self.runtime,
        )
    }

    /// The devices built so far, by number (the teardown's list: a device
    /// never used has nothing to release).
    pub(crate) fn built(&self) -> impl Iterator<Item = &Device> {
        self.chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|chunk| chunk.iter().filter_map(OnceLock::get))
            .map(|device| &**device)
    }

    /// How many devices were built (for reports and tests).
    pub(crate) fn built_count(&self) -> usize {
        self.built().count()
    }
}
