//! `LIBOMPTARGET_INFO` output: the INFO lines libomptarget prints (mapping
//! changes, data transfers, kernel arguments, the plugin's kernel launch),
//! worded as the caller's release words them; the table dumps are in
//! `info_dump`. The release is asked only once a line is printed
//! (INFO on): with INFO off every entry point here is one flag test.

use super::args::MapArgs;
use super::diag::{name_from_mapping, Diagnostic, Loc};
use super::release::{LaunchInfo, Release};
use super::{DeviceCtx, Offload};
use omptarget::abi::map_type;
use omptarget::mapping::{HexPtr, MapEvent, MappedEntry, RefCountDisplay, RefKind};
use std::ffi::c_char;

/// Print kernel/data-region arguments.
pub const INFO_KERNEL_ARGS: u32 = 0x0001;
/// Print when a mapping already exists.
pub const INFO_MAPPING_EXISTS: u32 = 0x0002;
/// Dump the mapping tables at region exit or failure.
pub const INFO_DUMP_TABLE: u32 = 0x0004;
/// Print when a mapping is created or removed.
pub const INFO_MAPPING_CHANGED: u32 = 0x0008;
/// The plugin's kernel launches (LLVM 15+'s plugins).
pub const INFO_PLUGIN_KERNEL: u32 = 0x0010;
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

/// The construct an INFO argument list is printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InfoRegion {
    /// `__tgt_target_data_begin*` (`nowait`: a `_nowait` entry).
    DataBegin { nowait: bool },
    /// `__tgt_target_data_end*`.
    DataEnd { nowait: bool },
    /// `__tgt_target_data_update*`.
    DataUpdate { nowait: bool },
    /// A target region's kernel.
    Kernel,
}

impl InfoRegion {
    /// The words `release`'s runtime starts the argument list with.
    fn text(self, release: Release) -> &'static str {
        use InfoRegion::*;
        if !release.prints_info_since_llvm15() {
            return match self {
                DataBegin { .. } => "Entering OpenMP data region",
                DataEnd { .. } => "Exiting OpenMP data region",
                DataUpdate { .. } => "Updating OpenMP data",
                Kernel => "Entering OpenMP kernel",
            };
        }
        match self {
            DataBegin { nowait: false } => "Entering OpenMP data region with being_mapper",
            DataBegin { nowait: true } => "Entering OpenMP data region with being_nowait_mapper",
            DataEnd { nowait: false } => "Exiting OpenMP data region with end_mapper",
            DataEnd { nowait: true } => "Exiting OpenMP data region with end_nowait_mapper",
            DataUpdate { nowait: false } => {
                "Updating data within the OpenMP data region with update_mapper"
            }
            DataUpdate { nowait: true } => {
                "Updating data within the OpenMP data region with update_nowait_mapper"
            }
            Kernel => "Entering OpenMP kernel",
        }
    }
}

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
            MapEvent::Created { .. } | MapEvent::Removed { .. } | MapEvent::HostPointer { .. } => {
                INFO_MAPPING_CHANGED
            }
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

    /// The INFO line of a map event (its kind is enabled), as the caller's
    /// release prints it.
    #[cold]
    #[inline(never)]
    fn print_map_event(&self, device: i32, event: &MapEvent) {
        let since_llvm15 = self.host.caller_release().prints_info_since_llvm15();
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
                refs_after,
                kind,
                action,
            } => {
                // LLVM 14 defers a data end's final decrement and shows the
                // count before it; LLVM 15+ make it in the query.
                let (refs, text) = if since_llvm15 {
                    (refs_after, action.text_since_llvm15())
                } else {
                    (refs, action.text())
                };
                let (dyn_action, hold_action) = split_action(kind, text);
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
                host_base,
                host_begin,
                alloc_begin,
                target,
                size,
                refs,
                name,
            } => {
                let text = if since_llvm15 {
                    format!(
                        "Creating new map entry with HstPtrBase={}, HstPtrBegin={}, \
                         TgtAllocBegin={}, TgtPtrBegin={}, Size={}, DynRefCount={}, \
                         HoldRefCount={}, Name={}\n",
                        HexPtr(host_base),
                        HexPtr(host_begin),
                        HexPtr(alloc_begin),
                        HexPtr(target),
                        size,
                        RefCountDisplay(refs.dynamic),
                        RefCountDisplay(refs.hold),
                        var_name(name)
                    )
                } else {
                    format!(
                        "Creating new map entry with HstPtrBegin={}, TgtPtrBegin={}, Size={}, \
                         DynRefCount={}, HoldRefCount={}, Name={}\n",
                        HexPtr(host_begin),
                        HexPtr(target),
                        size,
                        RefCountDisplay(refs.dynamic),
                        RefCountDisplay(refs.hold),
                        var_name(name)
                    )
                };
                (INFO_MAPPING_CHANGED, text)
            }
            MapEvent::HostPointer { host_begin, size } => {
                // LLVM 14 says nothing here.
                if !since_llvm15 {
                    return;
                }
                (
                    INFO_MAPPING_CHANGED,
                    format!(
                        "Return HstPtrBegin {} Size={} for unified shared memory\n",
                        HexPtr(host_begin),
                        size
                    ),
                )
            }
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
        entry.map_or(0, |e| self.shown_name(&e, None))
    }

    /// The name an entry's INFO line or dump shows: a global's mapping
    /// (infinite count) is unnamed for LLVM 14 (`release`, asked if not
    /// given only for such a mapping).
    pub(crate) fn shown_name(&self, entry: &MappedEntry, release: Option<Release>) -> usize {
        if entry.name == 0 || !entry.refs.is_dynamic_infinite() {
            return entry.name;
        }
        let release = release.unwrap_or_else(|| self.host.caller_release());
        if release.names_global_mappings() {
            entry.name
        } else {
            0
        }
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

    /// The plugin's "Launching kernel" line (LLVM 15+'s plugins, bit 0x10;
    /// LLVM 14's host plugin prints none), named after the kernel's symbol
    /// (`name`, asked for only when the line is printed) on the plugin's
    /// own device number. The counts are those LLVM's host plugin launches
    /// with ([`host_launch_counts`]).
    #[inline]
    pub(crate) fn info_kernel_launch(
        &self,
        local_device: i32,
        launch: &super::KernelLaunch,
        name: impl FnOnce() -> String,
    ) {
        if self.registry.info_enabled(INFO_PLUGIN_KERNEL) {
            self.print_kernel_launch(local_device, launch, name());
        }
    }

    #[cold]
    #[inline(never)]
    fn print_kernel_launch(&self, local_device: i32, launch: &super::KernelLaunch, name: String) {
        let release = self.host.caller_release();
        let Some(style) = release.kernel_launch_info() else {
            return;
        };
        let (blocks, threads) = host_launch_counts(release, launch);
        let text = match style {
            LaunchInfo::Counts => format!(
                "Launching kernel {name} with {blocks} blocks and {threads} threads in Generic mode\n"
            ),
            LaunchInfo::Dimensions => format!(
                "Launching kernel {name} with [{blocks},1,1] blocks and [{threads},1,1] threads \
                 in Generic mode\n"
            ),
        };
        self.emit(Diagnostic::Plugin {
            device: local_device,
            text,
        });
    }

    /// LLVM's `printKernelArguments`, when INFO_KERNEL_ARGS is on.
    pub(crate) fn info_kernel_arguments(
        &self,
        loc: Loc<'_>,
        device: i64,
        args: &MapArgs<'_>,
        region: InfoRegion,
    ) {
        if self.registry.info_level() & INFO_KERNEL_ARGS == 0 {
            return;
        }
        let release = self.host.caller_release();
        let region = region.text(release);
        let device = device as i32;
        let info = loc.source_info();
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
            // Only clang 22 writes ATTACH entries, and LLVM 22 names them.
            let attach = release >= Release::Llvm22 && t & map_type::ATTACH != 0;
            let kind = if attach && t & map_type::ALWAYS != 0 {
                "attach:always"
            } else if attach {
                "attach"
            } else if t & map_type::TO != 0 && t & map_type::FROM != 0 {
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
                    // SAFETY: `args`'s contract (`MapArgs::from_raw`): its
                    // name is null or a NUL-terminated string.
                    unsafe { name_from_mapping(args.name(i) as *const c_char) },
                    args.size(i),
                    implicit
                ),
            );
        }
    }
}

/// The blocks and threads LLVM's host plugin launches a kernel with, as its
/// INFO line says (it runs one thread of one team whatever they say).
/// LLVM 19's host kernels have no kernel environment, so they are "bare":
/// a `num_teams` or `thread_limit` (dimension 0, above 0) is taken as it
/// is, and 1 otherwise (the grid's limits are all 1). LLVM 22 treats them
/// as generic kernels, capped by those limits: always 1 and 1.
pub(crate) fn host_launch_counts(release: Release, launch: &super::KernelLaunch) -> (u64, u32) {
    if release >= Release::Llvm22 {
        return (1, 1);
    }
    // Dimension 0 as the plugin reads it: unsigned.
    let teams = launch.num_teams as u32;
    let threads = launch.thread_limit as u32;
    (
        if teams > 0 { u64::from(teams) } else { 1 },
        if threads > 0 { threads } else { 1 },
    )
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
