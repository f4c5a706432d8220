//! The mapping-table dumps of `LIBOMPTARGET_INFO` (LLVM's
//! `dumpTargetPointerMappings`): after each target construct under the
//! dump-table bit, and at exit (LLVM's device destructors).

use super::diag::{Ident, Loc, SourceInfo};
use super::info::{INFO_ALL, INFO_DUMP_TABLE};
use super::{Offload, Release};
use omptarget::mapping::HexPtr;
use std::ffi::c_char;

/// The location LLVM's device destructor dumps under.
const EXIT_LOCATION: &[u8] = b";libomptarget;libomptarget;0;0;;\0";

impl Offload<'_> {
    /// LLVM's `dumpTargetPointerMappings` for every device.
    pub(crate) fn dump_all_mappings(&self, loc: Loc<'_>) {
        // Asked once for the whole dump (a stack walk; INFO is on).
        let release = self.host.caller_release();
        for device in 0..self.registry.num_devices() {
            self.dump_mappings(loc, device, release);
        }
    }

    /// What LLVM's device destructors print at exit when
    /// `LIBOMPTARGET_INFO` has the dump-table bit: every device's table.
    /// LLVM 15+ destroy their devices last to first, so the dumps come in
    /// that order. The shim calls this before shutting the runtime down.
    pub fn dump_mappings_at_exit(&self) {
        if !self.registry.info_enabled(INFO_DUMP_TABLE) {
            return;
        }
        let loc = Ident {
            reserved_1: 0,
            flags: 0,
            reserved_2: 0,
            reserved_3: 0,
            psource: EXIT_LOCATION.as_ptr() as *const c_char,
        };
        let release = self.host.caller_release();
        let devices = 0..self.registry.num_devices();
        let order: Box<dyn Iterator<Item = i32>> = if release.prints_info_since_llvm15() {
            Box::new(devices.rev())
        } else {
            Box::new(devices)
        };
        // SAFETY: `loc` is a local `ident_t` whose `psource` is the static,
        // NUL-terminated EXIT_LOCATION; both outlive the dumps.
        let loc = unsafe { Loc::from_raw(&loc) };
        for device in order {
            self.dump_mappings(loc, device, release);
        }
    }

    /// LLVM's `dumpTargetPointerMappings` for one device. An empty table
    /// prints nothing for LLVM 14, a line saying so for LLVM 15+.
    fn dump_mappings(&self, loc: Loc<'_>, device: i32, release: Release) {
        let Some(dev) = self.device(device as i64) else {
            return;
        };
        let mut entries = dev.ops.mappings().entries();
        // LLVM's table still holds the globals of unregistered binaries
        // (a live mapping at the same address stands for them, as LLVM
        // would have found the old one there).
        for stale in self.registry.unloaded_globals(device) {
            if let Err(at) = entries.binary_search_by_key(&stale.host_begin, |e| e.host_begin) {
                entries.insert(at, stale);
            }
        }
        if entries.is_empty() {
            if release.prints_info_since_llvm15() {
                self.info(
                    INFO_ALL,
                    device,
                    "OpenMP Host-Device pointer mappings table empty\n".to_string(),
                );
            }
            return;
        }
        let kernel = loc.source_info();
        self.info(
            INFO_ALL,
            device,
            format!(
                "OpenMP Host-Device pointer mappings after block at {}:{}:{}:\n",
                kernel.filename, kernel.line, kernel.column
            ),
        );
        self.info(
            INFO_ALL,
            device,
            format!(
                "{:<18} {:<18} {} {} {} {}\n",
                "Host Ptr", "Target Ptr", "Size (B)", "DynRefCount", "HoldRefCount", "Declaration"
            ),
        );
        for entry in entries {
            let name = self.shown_name(&entry, Some(release));
            // SAFETY: the mapping table's invariant: `name` is 0 or the
            // `map_var_info_t` passed with the mapping, a NUL-terminated
            // constant the compiler emits or a global's name the registry
            // keeps (LLVM dereferences it the same way).
            let var = unsafe { SourceInfo::from_var_name(name as *const c_char) };
            self.info(
                INFO_ALL,
                device,
                format!(
                    "{} {} {:<8} {:<11} {:<12} {} at {}:{}:{}\n",
                    HexPtr(entry.host_begin),
                    HexPtr(entry.device_begin),
                    entry.size(),
                    entry.dynamic_display().to_string(),
                    entry.hold_display().to_string(),
                    var.name,
                    var.filename,
                    var.line,
                    var.column
                ),
            );
        }
    }
}
