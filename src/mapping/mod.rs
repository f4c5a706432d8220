//! The per-device table of host ranges mapped to device memory, with
//! OpenMP 5.1 reference counting as LLVM 14 implements it. (H4)

/// Host -> device mappings of one device. Internally synchronised.
#[derive(Default)]
pub struct MappingTable {}

/// One mapping still present, for the shutdown report.
#[derive(Debug, Clone)]
pub struct MappedRange {
    pub host_begin: usize,
    pub size: usize,
    pub device_begin: usize,
    pub dynamic_refcount: u64,
    pub hold_refcount: u64,
}

impl MappingTable {
    /// Mappings still present whose device memory was allocated by the
    /// runtime (not `associate_ptr` or globals), for the shutdown report.
    pub fn live_entries(&self) -> Vec<MappedRange> {
        Vec::new()
    }
}
