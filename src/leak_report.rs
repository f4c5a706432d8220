//! The leak report: what the program never freed or unmapped, where it was
//! allocated, and what the runtime freed for it at shutdown
//! ([`crate::ShutdownReport::leaks`]).
//!
//! A mapping that was never released owns a device allocation; that
//! allocation is listed under the mapping (with the allocation's origin:
//! the `target enter data` or `target data` that made it), not again as
//! an allocation of its own.
use crate::abi::AllocKind;
use crate::origin::AllocOrigin;
use crate::shutdown_report::ShutdownReport;
use std::fmt;

/// A device allocation the program never freed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedAllocation {
    /// Runtime-wide number of the device.
    pub device: usize,
    /// Device address.
    pub address: usize,
    /// Size in bytes.
    pub size: usize,
    /// The kind of memory.
    pub kind: AllocKind,
    /// Where it was allocated.
    pub origin: AllocOrigin,
}

/// A mapping the program never released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedMapping {
    /// Runtime-wide number of the device.
    pub device: usize,
    /// First host address of the range.
    pub host_begin: usize,
    /// Size of the range in bytes.
    pub size: usize,
    /// Device address the range is mapped to.
    pub device_begin: usize,
    /// Its dynamic reference count at shutdown.
    pub dynamic_refcount: u64,
    /// Its `ompx_hold` reference count at shutdown.
    pub hold_refcount: u64,
    /// Where its device memory was allocated (`Unknown` when the mapping's
    /// memory is not one of the runtime's allocations, e.g. after a partial
    /// teardown).
    pub origin: AllocOrigin,
}

// The report's `leaks()` is written here, beside the type it builds, so
// that `shutdown_report` does not depend on this module.
impl ShutdownReport {
    /// What the program leaked: every allocation never freed and mapping
    /// never released (device, size, host range, where it was allocated),
    /// and what the runtime freed for it.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// let runtime = Runtime::new(Config::default())?;
    /// std::mem::forget(DeviceBuffer::<u8>::new(runtime.device(0)?, 100)?);
    /// let leaks = runtime.shutdown().leaks();
    /// assert_eq!(leaks.allocations.len(), 1);
    /// assert_eq!(leaks.bytes_freed, 100);
    /// let text = leaks.to_string();
    /// assert!(text.starts_with("omptarget leak report: LEAKS: 1 allocations never freed"));
    /// assert!(text.contains("allocated at src/leak_report.rs:"), "{text}");
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn leaks(&self) -> LeakReport {
        LeakReport::of(self)
    }
}

/// What the program leaked, from a [`ShutdownReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeakReport {
    /// Allocations never freed (not backing a mapping listed below).
    pub allocations: Vec<LeakedAllocation>,
    /// Mappings never released.
    pub mappings: Vec<LeakedMapping>,
    /// Allocations the runtime freed for the program at shutdown.
    pub blocks_freed: usize,
    /// Their bytes.
    pub bytes_freed: usize,
    /// The teardown was partial (calls in flight at exit): what the
    /// program held was left to the OS rather than freed.
    pub left_to_os: bool,
}

impl LeakReport {
    /// Build the leak report of `report`.
    pub fn of(report: &ShutdownReport) -> LeakReport {
        let mut allocations: Vec<LeakedAllocation> = report
            .user_leaks
            .iter()
            .map(|l| LeakedAllocation {
                device: l.device,
                address: l.address,
                size: l.size,
                kind: l.kind,
                origin: l.origin,
            })
            .collect();
        let mut mappings = Vec::new();
        for m in &report.live_mappings {
            let r = &m.range;
            // The allocation that holds the mapping's device range.
            let owner = allocations.iter().position(|a| {
                a.device == m.device
                    && a.address <= r.device_begin
                    && r.device_begin < a.address.saturating_add(a.size)
            });
            let origin = owner.map_or(AllocOrigin::Unknown, |i| allocations.remove(i).origin);
            mappings.push(LeakedMapping {
                device: m.device,
                host_begin: r.host_begin,
                size: r.size,
                device_begin: r.device_begin,
                dynamic_refcount: r.dynamic_refcount,
                hold_refcount: r.hold_refcount,
                origin,
            });
        }
        let (blocks_freed, bytes_freed) =
            report
                .steps_in(crate::Phase::FreeUserAllocations)
                .fold((0, 0), |(n, b), step| match step {
                    crate::TeardownStep::FreeUserAllocations { blocks, bytes, .. } => {
                        (n + blocks, b + bytes)
                    }
                    _ => (n, b),
                });
        LeakReport {
            allocations,
            mappings,
            blocks_freed,
            bytes_freed,
            left_to_os: report.left_to_os.is_some(),
        }
    }

    /// Nothing leaked.
    pub fn is_empty(&self) -> bool {
        self.allocations.is_empty() && self.mappings.is_empty()
    }

    /// Total bytes never freed or unmapped.
    pub fn leaked_bytes(&self) -> usize {
        self.allocations.iter().map(|a| a.size).sum::<usize>()
            + self.mappings.iter().map(|m| m.size).sum::<usize>()
    }
}

/// Where an origin resolves to, for the report's lines.
fn at(origin: &AllocOrigin) -> String {
    match origin.resolve() {
        Some(loc) => format!("\n        allocated at {loc}"),
        None => String::new(),
    }
}

impl fmt::Display for LeakReport {
    /// The first line is `omptarget leak report: no leaks` or
    /// `omptarget leak report: LEAKS: ...` (what `omptarget run
    /// --leak-report` looks for); source locations are resolved here.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            writeln!(f, "omptarget leak report: no leaks")?;
        } else {
            writeln!(
                f,
                "omptarget leak report: LEAKS: {} allocations never freed, {} mappings never released, {} bytes",
                self.allocations.len(),
                self.mappings.len(),
                self.leaked_bytes()
            )?;
        }
        for a in &self.allocations {
            writeln!(
                f,
                "    device {}: allocation {:#x}, {} bytes ({:?}) never freed{}",
                a.device,
                a.address,
                a.size,
                a.kind,
                at(&a.origin)
            )?;
        }
        for m in &self.mappings {
            writeln!(
                f,
                "    device {}: mapping of host {:#x}..{:#x} ({} bytes) -> {:#x} never released (refcount {}, hold {}){}",
                m.device,
                m.host_begin,
                m.host_begin.wrapping_add(m.size),
                m.size,
                m.device_begin,
                m.dynamic_refcount,
                m.hold_refcount,
                at(&m.origin)
            )?;
        }
        if self.left_to_os {
            writeln!(
                f,
                "  calls were in flight at exit: what the program held was left to the OS"
            )?;
        } else {
            writeln!(
                f,
                "  the runtime freed {} allocations ({} bytes) the program still held",
                self.blocks_freed, self.bytes_freed
            )?;
        }
        Ok(())
    }
}
