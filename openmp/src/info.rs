//! `LIBOMPTARGET_INFO` output: the INFO lines LLVM 14's libomptarget prints
//! (mapping changes, data transfers, kernel arguments, table dumps).

use super::args::MapArgs;
use super::diag::{name_from_mapping, Diagnostic, Ident, SourceInfo};
use super::{DeviceCtx, Offload};
use omptarget::abi::map_type;
use omptarget::mapping::{HexPtr, MapEvent, RefCountDisplay, RefKind};
use std::ffi::c_char;

/// Print kernel/data-region arguments.
pub const INFO_KERNEL_ARGS: u32 = 0x0001;
/// Print when a mapping already exists.
pub const INFO_MAPPING_EXISTS: u32 = 0x0002;
/// Dump the mapping tables at region exit or failure.
pub const INFO_DUMP_TABLE: u32 = 0x0004;
/// Print when a mapping is created or removed.
pub const INFO_MAPPING_CHANGED: u32 = 0x0008;
/// Print data transfers.
pub const INFO_DATA_TRANSFER: u32 = 0x0020;
/// Print variables that have no device counterpart (LLVM 19+).
pub const INFO_EMPTY_MAPPING: u32 = 0x0040;
/// Any info bit.
pub const INFO_ALL: u32 = 0xffff_ffff;

/// The info level of a `LIBOMPTARGET_INFO` value, read as LLVM reads it
/// (`std::stoi`: a leading decimal integer, negative values as their
/// 32-bit pattern, so `-1` is every bit; see
/// [`omptarget::abi::info_type::parse_level`]). Unset or unparsable: 0 (LLVM
/// would terminate on an unparsable value).
pub fn info_level_from_env(value: Option<&str>) -> u32 {
    value.map_or(0, |text| {
        omptarget::abi::info_type::parse_level(text.as_bytes())
    })
}

/// The location LLVM's device destructor dumps under.
const EXIT_LOCATION: &[u8] = b";libomptarget;libomptarget;0;0;;\0";

impl Offload<'_> {
    pub(crate) fn info(&self, kind: u32, device: i32, text: String) {
        if self.registry.info_enabled(kind) {
            self.emit(Diagnostic::Info { device, text });
        }
    }

    /// The INFO line of a mapping-table event.
    #[inline]
    pub(crate) fn info_map_event(&self, device: i32, event: &MapEvent) {
        // Decide before formatting: this runs for every map event, usually
        // with the info bits off (as LLVM's INFO macro tests first); the
        // check is inlined into the callers, the formatting is not.
        let kind = match event {
            MapEvent::Exists { .. } | MapEvent::Found { .. } => INFO_MAPPING_EXISTS,
            MapEvent::Created { .. } | MapEvent::Removed { .. } => INFO_MAPPING_CHANGED,
        };
        if self.registry.info_enabled(kind) {
            self.print_map_event(device, event);
        }
    }

    /// LLVM 19+'s `variable X does not have a valid device counterpart`,
    /// when that INFO bit is on (the caller decided the variable has none).
    pub(crate) fn info_empty_mapping(&self, device: i32, name: usize) {
        if self.registry.info_enabled(INFO_EMPTY_MAPPING) {
            let text = format!(
                "variable {} does not have a valid device counterpart\n",
                var_name(name)
            );
            self.info(INFO_EMPTY_MAPPING, device, text);
        }
    }

    /// The INFO line of a map event (its kind is enabled).
    #[cold]
    #[inline(never)]
    fn print_map_event(&self, device: i32, event: &MapEvent) {
        let (kind, text) = match *event {
            MapEvent::Exists {
                implicit,
                host_begin,
                target,
                size,
                refs,
                kind,
                action,
                name,
            } => {
                let (dyn_action, hold_action) = split_action(kind, action.text());
                (
                    INFO_MAPPING_EXISTS,
                    format!(
                        "Mapping exists{} with HstPtrBegin={}, TgtPtrBegin={}, Size={}, \
                         DynRefCount={}{}, HoldRefCount={}{}, Name={}\n",
                        if implicit { " (implicit)" } else { "" },
                        HexPtr(host_begin),
                        HexPtr(target),
                        size,
                        RefCountDisplay(refs.dynamic),
                        dyn_action,
                        RefCountDisplay(refs.hold),
                        hold_action,
                        var_name(name)
                    ),
                )
            }
            MapEvent::Found {
                host_begin,
                target,
                size,
                refs,
                kind,
                action,
            } => {
                let (dyn_action, hold_action) = split_action(kind, action.text());
                (
                    INFO_MAPPING_EXISTS,
                    format!(
                        "Mapping exists with HstPtrBegin={}, TgtPtrBegin={}, Size={}, \
                         DynRefCount={}{}, HoldRefCount={}{}\n",
                        HexPtr(host_begin),
                        HexPtr(target),
                        size,
                        RefCountDisplay(refs.dynamic),
                        dyn_action,
                        RefCountDisplay(refs.hold),
                        hold_action
                    ),
                )
            }
            MapEvent::Created {
                host_begin,
                target,
                size,
                refs,
                name,
            } => (
                INFO_MAPPING_CHANGED,
                format!(
                    "Creating new map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, \
                     DynRefCount={}, HoldRefCount={}, Name={}\n",
                    HexPtr(host_begin),
                    HexPtr(target),
                    size,
                    RefCountDisplay(refs.dynamic),
                    RefCountDisplay(refs.hold),
                    var_name(name)
                ),
            ),
            MapEvent::Removed {
                host_begin,
                target,
                size,
                name,
            } => (
                INFO_MAPPING_CHANGED,
                format!(
                    "Removing map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, Name={}\n",
                    HexPtr(host_begin),
                    HexPtr(target),
                    size,
                    var_name(name)
                ),
            ),
        };
        self.info(kind, device, text);
    }

    /// The `map_var_info_t` LLVM's transfer INFO line names: that of the
    /// mapping its lookup of `host` lands on (0 when INFO is off).
    pub(crate) fn transfer_name(&self, dev: &DeviceCtx<'_>, host: usize, size: i64) -> usize {
        if !self.registry.info_enabled(INFO_DATA_TRANSFER) {
            return 0;
        }
        let (_, entry) = dev.ops.mappings().lookup(host, size);
        entry.map_or(0, |e| e.name)
    }

    /// The INFO line of a data transfer (the check inlined, the
    /// formatting out of line).
    #[inline]
    pub(crate) fn info_transfer(
        &self,
        dev: &DeviceCtx<'_>,
        to_device: bool,
        host: usize,
        target: usize,
        size: i64,
        name: usize,
    ) {
        if self.registry.info_enabled(INFO_DATA_TRANSFER) {
            self.print_transfer(dev, to_device, host, target, size, name);
        }
    }

    #[cold]
    #[inline(never)]
    fn print_transfer(
        &self,
        dev: &DeviceCtx<'_>,
        to_device: bool,
        host: usize,
        target: usize,
        size: i64,
        name: usize,
    ) {
        let name = var_name(name);
        let text = if to_device {
            format!(
                "Copying data from host to device, HstPtr={}, TgtPtr={}, Size={}, Name={}\n",
                HexPtr(host),
                HexPtr(target),
                size,
                name
            )
        } else {
            format!(
                "Copying data from device to host, TgtPtr={}, HstPtr={}, Size={}, Name={}\n",
                HexPtr(target),
                HexPtr(host),
                size,
                name
            )
        };
        self.info(INFO_DATA_TRANSFER, dev.id, text);
    }

    /// LLVM's `printKernelArguments`, when INFO_KERNEL_ARGS is on.
    ///
    /// # Safety
    /// `loc` is null or a valid `ident_t`; `args` is a valid view.
    pub(crate) unsafe fn info_kernel_arguments(
        &self,
        loc: *const Ident,
        device: i64,
        args: &MapArgs,
        region: &str,
    ) {
        if self.registry.info_level() & INFO_KERNEL_ARGS == 0 {
            return;
        }
        let device = device as i32;
        // SAFETY: our `# Safety`: `loc` is null or a valid `ident_t`.
        let info = unsafe { SourceInfo::from_ident(loc) };
        self.info(
            INFO_ALL,
            device,
            format!(
                "{} at {}:{}:{} with {} arguments:\n",
                region,
                info.filename,
                info.line,
                info.column,
                args.len()
            ),
        );
        for i in 0..args.len() {
            let t = args.map_type(i);
            let kind = if t & map_type::TO != 0 && t & map_type::FROM != 0 {
                "tofrom"
            } else if t & map_type::TO != 0 {
                "to"
            } else if t & map_type::FROM != 0 {
                "from"
            } else if t & map_type::PRIVATE != 0 {
                "private"
            } else if t & map_type::LITERAL != 0 {
                "firstprivate"
            } else if args.size(i) != 0 {
                "alloc"
            } else {
                "use_address"
            };
            let implicit = if t & map_type::IMPLICIT != 0 {
                "(implicit)"
            } else {
                ""
            };
            self.info(
                INFO_ALL,
                device,
                format!(
                    "{}({})[{}] {}\n",
                    kind,
                    // SAFETY: `args` is a valid view (our `# Safety`), so its
                    // name is null or a compiler-emitted NUL-terminated string.
                    unsafe { name_from_mapping(args.name(i) as *const c_char) },
                    args.size(i),
                    implicit
                ),
            );
        }
    }

    /// LLVM's `dumpTargetPointerMappings` for every device.
    ///
    /// # Safety
    /// `loc` is null or a valid `ident_t`.
    pub(crate) unsafe fn dump_all_mappings(&self, loc: *const Ident) {
        let count = self.registry.num_devices();
        for device in 0..count {
            // SAFETY: our `# Safety`: `loc` is null or a valid `ident_t`.
            unsafe { self.dump_mappings(loc, device) };
        }
    }

    /// What LLVM's device destructors print at exit when
    /// `LIBOMPTARGET_INFO` has the dump-table bit: every device's table.
    /// The shim calls this before shutting the runtime down.
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
        for device in 0..self.registry.num_devices() {
            // SAFETY: `loc` is a valid ident with a NUL-terminated source.
            unsafe { self.dump_mappings(&loc, device) };
        }
    }

    /// LLVM's `dumpTargetPointerMappings` for one device.
    ///
    /// # Safety
    /// `loc` is null or a valid `ident_t` (whose `psource` is null or a
    /// NUL-terminated string).
    unsafe fn dump_mappings(&self, loc: *const Ident, device: i32) {
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
            return;
        }
        // SAFETY: our `# Safety`: `loc` is null or a valid `ident_t`.
        let kernel = unsafe { SourceInfo::from_ident(loc) };
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
            // SAFETY: the mapping table's invariant: `name` is 0 or the
            // `map_var_info_t` passed with the mapping, a NUL-terminated
            // constant the compiler emits (LLVM dereferences it the same way).
            let var = unsafe { SourceInfo::from_var_name(entry.name as *const c_char) };
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

fn split_action(kind: RefKind, action: &'static str) -> (&'static str, &'static str) {
    match kind {
        RefKind::Dynamic => (action, ""),
        RefKind::Hold => ("", action),
    }
}

fn var_name(name: usize) -> String {
    // SAFETY: names come from the compiler's map_var_info_t arrays: null or
    // NUL-terminated strings that live as long as the program.
    unsafe { name_from_mapping(name as *const c_char) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_env_parsing() {
        assert_eq!(info_level_from_env(None), 0);
        assert_eq!(info_level_from_env(Some("-1")), u32::MAX);
        assert_eq!(info_level_from_env(Some("32")), 32);
        assert_eq!(info_level_from_env(Some(" 6abc")), 6);
        assert_eq!(info_level_from_env(Some("abc")), 0);
        // What std::stoi accepts: C whitespace, a sign, trailing junk.
        assert_eq!(info_level_from_env(Some("\t\x0b\n+8")), 8);
        assert_eq!(info_level_from_env(Some("1abc")), 1);
        assert_eq!(info_level_from_env(Some("0x10")), 0);
        assert_eq!(info_level_from_env(Some("-0")), 0);
        assert_eq!(info_level_from_env(Some("0004")), 4);
        assert_eq!(info_level_from_env(Some("2147483647")), 0x7fff_ffff);
        assert_eq!(info_level_from_env(Some("-2147483648")), 0x8000_0000);
        // Where stoi throws (LLVM terminates): off, no panic.
        for junk in [
            "",
            " ",
            "-",
            "+",
            "+-1",
            "\u{a0}1",
            "2147483648",
            "4294967295",
            "-2147483649",
            "99999999999999999999999",
            "١٢",
        ] {
            assert_eq!(info_level_from_env(Some(junk)), 0, "{junk:?}");
        }
    }
}
