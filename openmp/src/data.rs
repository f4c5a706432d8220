//! Mapping data on entry to and exit from a data environment (LLVM's
//! `targetDataBegin`, `targetDataEnd`, `targetDataMapper`) and the
//! `__tgt_target_data_begin/end` entry points.

use super::args::{parent_index, MapArgs};
use super::diag::{Diagnostic, Fatal, Loc};
use super::error::OffloadError;
use super::info::{InfoRegion, INFO_DATA_TRANSFER, INFO_EMPTY_MAPPING};
use super::mapper::run_mapper;
use super::ompt::RegionKind;
use super::release::CallerRelease;
use super::{DeviceCtx, Offload};
use omptarget::abi::map_type as mt;
use omptarget::device::DevicePtr;
use omptarget::mapping::{EntryHandle, MapRequest, ShadowPtr, ShadowVisit, UnmapRequest};
use smallvec::SmallVec;
use std::ffi::c_void;

/// LLVM 14 pads struct sections mapped from a member onward down to this
/// alignment, on the host and the device alike, so that members keep their
/// alignment on the device.
const ALIGNMENT: i64 = 8;
/// LLVM 19's bound on a partially mapped struct's alignment.
const MAX_ALIGNMENT: usize = 16;
const POINTER_SIZE: i64 = std::mem::size_of::<*mut c_void>() as i64;

/// Which data operation a mapper's components feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataOp {
    Begin,
    End,
    Update,
}

/// The host section of one map argument, and what the device allocation
/// holds before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Section {
    pub begin: usize,
    pub size: i64,
    /// Bytes allocated on the device before `begin`'s copy (LLVM 19's
    /// `TgtPadding`); they stand for no host memory.
    pub device_padding: usize,
}

/// LLVM 19's `getPartialStructRequiredAlignment`: the alignment the base
/// address has (its lowest set bit), at most 16. A null base is taken as
/// maximally aligned.
pub(crate) fn partial_struct_alignment(base: usize) -> usize {
    if base == 0 {
        return MAX_ALIGNMENT;
    }
    (1usize << base.trailing_zeros()).min(MAX_ALIGNMENT)
}

/// The section of argument `i`, padded when it is the combined entry of a
/// struct whose next argument is its member: for LLVM 14 callers the host
/// section grows down to 8-byte alignment (the padding is mapped data);
/// for LLVM 19/22 callers the padding (`begin` modulo the base's
/// alignment) is allocated on the device only.
fn padded_section(args: &MapArgs<'_>, i: usize, caller: &CallerRelease<'_>) -> Section {
    let mut section = Section {
        begin: args.begin(i) as usize,
        size: args.size(i),
        device_padding: 0,
    };
    let next = i + 1;
    let combined = parent_index(args.map_type(i)) < 0
        && next < args.len()
        && parent_index(args.map_type(next)) == i as i64;
    if !combined {
        return section;
    }
    let host_padding = (section.begin as i64) % ALIGNMENT;
    let device_padding = section.begin % partial_struct_alignment(args.base(i) as usize);
    if host_padding == 0 && device_padding == 0 {
        // Aligned members need no padding in any release: the release (a
        // stack walk) is not asked.
        return section;
    }
    if caller.get().struct_padding_is_device_only() {
        section.device_padding = device_padding;
    } else if host_padding != 0 {
        section.begin = section.begin.wrapping_sub(host_padding as usize);
        section.size = section.size.wrapping_add(host_padding);
    }
    section
}

fn has(map_type: i64, flag: i64) -> bool {
    map_type & flag != 0
}

impl<'a> Offload<'a> {
    /// `__tgt_target_data_begin_mapper`: map on entry to `target data` /
    /// `target enter data`. Safe: `loc` and `args` carry the call's
    /// contract (the host memory the map types name), checked where they
    /// were made.
    pub fn target_data_begin(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
    ) -> Result<(), Fatal> {
        self.target_data_begin_as(loc, device_id, args, false)
    }

    /// `__tgt_target_data_begin_mapper` or, with `nowait`, its `_nowait`
    /// variant (run alike; LLVM 15+ name it in the INFO argument list).
    pub fn target_data_begin_as(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
        nowait: bool,
    ) -> Result<(), Fatal> {
        let _span =
            omptarget::profile::span(omptarget::profile::Kind::Mapping, "target data begin");
        let op = |dev: &DeviceCtx<'a>| self.data_begin(dev, args, false);
        let region = InfoRegion::DataBegin { nowait };
        self.data_entry(loc, device_id, args, RegionKind::EnterData, region, op)
    }

    /// `__tgt_target_data_end_mapper`: unmap on exit from `target data` /
    /// `target exit data`.
    pub fn target_data_end(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
    ) -> Result<(), Fatal> {
        self.target_data_end_as(loc, device_id, args, false)
    }

    /// `__tgt_target_data_end_mapper` or its `_nowait` variant.
    pub fn target_data_end_as(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
        nowait: bool,
    ) -> Result<(), Fatal> {
        let _span = omptarget::profile::span(omptarget::profile::Kind::Mapping, "target data end");
        let op = |dev: &DeviceCtx<'a>| self.data_end(dev, args, false);
        let region = InfoRegion::DataEnd { nowait };
        self.data_entry(loc, device_id, args, RegionKind::ExitData, region, op)
    }

    /// The common frame of the three `__tgt_target_data_*` entries, as
    /// LLVM's interface.cpp has it: resolve the device (running pending
    /// constructors), print the INFO argument list, run `op`, and turn its
    /// outcome into LLVM's behaviour under the offload policy.
    pub(crate) fn data_entry(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
        kind: RegionKind,
        region: InfoRegion,
        op: impl FnOnce(&DeviceCtx<'a>) -> Result<(), OffloadError>,
    ) -> Result<(), Fatal> {
        let _ompt = self.ompt_call();
        let Some(dev) = self.check_device_and_ctors(device_id, loc)? else {
            return Ok(());
        };
        self.info_kernel_arguments(loc, dev.id.into(), args, region);
        self.ompt_region_begin(kind, &dev);
        let ok = op(&dev).is_ok();
        let outcome = self.handle_target_outcome(ok, loc);
        // LLVM's end comes after the outcome (a fatal one aborts first).
        if outcome.is_ok() {
            self.ompt_region_end(kind, &dev);
        }
        outcome
    }

    /// LLVM's `targetDataMapper`: run the user-defined mapper of argument
    /// `i` (which has one) and apply `op` to the components it produced.
    pub(crate) fn data_mapper(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        i: usize,
        op: DataOp,
    ) -> Result<(), OffloadError> {
        let Some(components) = run_mapper(args, i) else {
            return Ok(());
        };
        let mut owned = components.to_args();
        // SAFETY: the components were pushed by argument `i`'s
        // compiler-emitted mapper, so they name host memory as their map
        // types say (`MapArgs::from_raw`'s contract for `args`), and their
        // names are the mapper's strings.
        let view = unsafe { owned.view() };
        match op {
            DataOp::Begin => self.data_begin(dev, &view, true),
            DataOp::End => self.data_end(dev, &view, true),
            DataOp::Update => self.data_update(dev, &view, true),
        }
    }

    /// LLVM's `targetDataBegin`. `args` names host memory as the map types
    /// say (a PTR_AND_OBJ base holds a pointer, a `to` range is readable, a
    /// RETURN_PARAM base is writable): `MapArgs::from_raw`'s contract.
    pub(crate) fn data_begin(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        from_mapper: bool,
    ) -> Result<(), OffloadError> {
        let usm = self.registry.unified_shared_memory();
        let table = dev.ops.mappings();
        let memory = self.memory(dev);
        let caller = self.caller();
        // clang 22's ATTACH entries act after every other entry is mapped.
        let mut attaches: SmallVec<[usize; 4]> = SmallVec::new();
        // Sections this call allocated (LLVM 22's `NewAllocations`): an
        // ATTACH entry acts only if its pointer or pointee is among them.
        let mut new_allocations: SmallVec<[(usize, usize); 4]> = SmallVec::new();
        for i in 0..args.len() {
            let t = args.map_type(i);
            if has(t, mt::LITERAL) || has(t, mt::PRIVATE) {
                continue;
            }
            if has(t, mt::ATTACH) {
                attaches.push(i);
                continue;
            }
            if args.mapper(i).is_some() {
                if self.data_mapper(dev, args, i, DataOp::Begin).is_err() {
                    return Err(self.report(OffloadError::MapperBeginFailed));
                }
                continue;
            }

            let Section {
                begin,
                size,
                device_padding,
            } = padded_section(args, i, &caller);
            let mut base = args.base(i) as usize;
            let name = args.name(i) as usize;
            let implicit = has(t, mt::IMPLICIT);
            let close = has(t, mt::CLOSE);
            let present = has(t, mt::PRESENT);
            let hold = has(t, mt::OMPX_HOLD);
            // "target data" calls carry no TARGET_PARAM, so MEMBER_OF decides.
            let mut update_ref = !(has(t, mt::MEMBER_OF) || (from_mapper && i == 0));

            let mut pointer = None;
            if has(t, mt::PTR_AND_OBJ) {
                let pointer_tpr = table.get_target_pointer(
                    &MapRequest {
                        host_begin: base,
                        host_base: base,
                        size: POINTER_SIZE,
                        name: 0,
                        to: false,
                        always: false,
                        implicit,
                        update_refcount: update_ref,
                        close,
                        present,
                        hold,
                        unified_shared_memory: usm,
                        device_padding: 0,
                        zero_length: caller.zero_length(POINTER_SIZE),
                        keep_attached_pointers: false,
                    },
                    &memory,
                );
                self.emit_map_failure(&pointer_tpr.failure);
                let Some(pointer_target) = pointer_tpr.target else {
                    return Err(self.report(OffloadError::NullTargetPointer { present }));
                };
                if pointer_tpr.is_new && !pointer_tpr.is_host_ptr {
                    new_allocations.push((base, POINTER_SIZE as usize));
                }
                pointer = Some((base, pointer_target, pointer_tpr.entry));
                // The pointee's base is the pointer's value.
                // SAFETY: `args`'s contract (`MapArgs::from_raw`): a
                // PTR_AND_OBJ base is host memory holding a pointer (LLVM
                // reads it the same way).
                base = unsafe { *(base as *const usize) };
                update_ref = !from_mapper || i != 0;
            }

            let tpr = table.get_target_pointer(
                &MapRequest {
                    host_begin: begin,
                    host_base: base,
                    size,
                    name,
                    to: has(t, mt::TO),
                    always: has(t, mt::ALWAYS),
                    implicit,
                    update_refcount: update_ref,
                    close,
                    present,
                    hold,
                    unified_shared_memory: usm,
                    device_padding,
                    zero_length: caller.zero_length(size),
                    // Asked only once some pointer is attached: the release
                    // is a stack walk, and without one nothing differs.
                    keep_attached_pointers: has(t, mt::TO)
                        && table.has_shadows()
                        && caller.get().new_map_keeps_attached_pointers(),
                },
                &memory,
            );
            self.emit_map_failure(&tpr.failure);
            // A zero-length section may point at nothing mapped (or NULL).
            if tpr.target.is_none() && (size != 0 || present) {
                return Err(self.report(OffloadError::NullTargetPointer { present }));
            }
            let target = tpr.target.unwrap_or(0);
            if tpr.is_new && !tpr.is_host_ptr && target != 0 {
                new_allocations.push((begin, size as usize));
            }

            if has(t, mt::RETURN_PARAM) {
                let keep_host =
                    tpr.target.is_none() && caller.get().unmapped_use_device_ptr_is_host_ptr();
                if !keep_host {
                    let delta = begin.wrapping_sub(base);
                    args.set_base(i, target.wrapping_sub(delta) as *mut c_void);
                }
            }

            // LLVM's getTargetPointer leaves its result "not present" only
            // for a zero-length section it found nothing for (and neither
            // unified memory without `close` nor `present` decided
            // otherwise).
            let usm_decides = usm && !close;
            let absent = size == 0 && tpr.entry.is_none() && !usm_decides && !present;
            if absent && t != 0 && !has(t, mt::MEMBER_OF) && !implicit {
                self.info_absent_variable(dev.id, name, &caller);
            }

            if let Some((pointer_host, pointer_target, pointer_entry)) = pointer {
                if tpr.is_host_ptr {
                    continue;
                }
                let expected = target.wrapping_sub(begin.wrapping_sub(base));
                let shadow = ShadowPtr {
                    host_ptr_value: base,
                    target_ptr_addr: pointer_target,
                    target_ptr_value: expected,
                };
                if table.upsert_shadow(pointer_host, shadow) {
                    let value = expected;
                    let value_addr = &value as *const usize as usize;
                    // INFO's name lookup needs the table: before the lock.
                    // LLVM 14 looks the local copy up (`unknown`); LLVM 15+
                    // name the copy after the pointer's mapping.
                    let named_after = if self.registry.info_enabled(INFO_DATA_TRANSFER)
                        && caller.get().prints_info_since_llvm15()
                    {
                        pointer_host
                    } else {
                        value_addr
                    };
                    let name = self.transfer_name(dev, named_after, POINTER_SIZE);
                    self.info_transfer(dev, true, value_addr, pointer_target, POINTER_SIZE, name);
                    let _update = pointer_entry.as_ref().map(|e| {
                        e.set_may_contain_attached_pointers();
                        e.lock_update()
                    });
                    // SAFETY: `value_addr` is the live local `value`, of
                    // POINTER_SIZE readable bytes; `pointer_target` is the
                    // device copy of the pointer, mapped on `dev` just above
                    // with POINTER_SIZE bytes.
                    let copied = self.traced_submit(
                        dev,
                        pointer_target,
                        value_addr,
                        POINTER_SIZE as usize,
                        || unsafe {
                            dev.ops.submit(
                                DevicePtr::from_raw(pointer_target as *mut c_void),
                                value_addr as *const c_void,
                                POINTER_SIZE as usize,
                            )
                        },
                    );
                    if copied.is_err() {
                        return Err(self.report(OffloadError::CopyToDeviceFailed));
                    }
                }
            }
        }
        for i in attaches {
            self.attach(dev, args, i, &new_allocations)?;
        }
        Ok(())
    }

    /// LLVM 19+'s INFO line for an explicit variable that found no device
    /// data (`use_device_addr` of an unmapped variable); the caller's
    /// release is asked only when the INFO bit is on.
    fn info_absent_variable(&self, device: i32, name: usize, caller: &CallerRelease<'_>) {
        if self.registry.info_enabled(INFO_EMPTY_MAPPING) && caller.get().reports_empty_mappings() {
            self.info_empty_mapping(device, name);
        }
    }

    /// clang 22's ATTACH entry `i`: if the pointer at `base` and its
    /// pointee section at `begin` are both mapped, and one of them was
    /// allocated by this construct (`new_allocations`) or the entry says
    /// `always`, point the device copy of the pointer at the device copy of
    /// the pointee (recorded as a shadow pointer, so the host value comes
    /// back when the pointer's data is copied from the device, as for
    /// `PTR_AND_OBJ`); otherwise nothing. As LLVM 22 does, the pointee is
    /// looked up first, then the pointer, each lookup with its INFO line.
    /// Entry `i` is an ATTACH entry (`data_begin` gathered them); any other
    /// is left alone, as its base need not hold a pointer.
    fn attach(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        i: usize,
        new_allocations: &[(usize, usize)],
    ) -> Result<(), OffloadError> {
        if !has(args.map_type(i), mt::ATTACH) {
            return Ok(());
        }
        let table = dev.ops.mappings();
        let usm = self.registry.unified_shared_memory();
        let caller = self.caller();
        let pointer_host = args.base(i) as usize;
        let pointee_begin = args.begin(i) as usize;
        let is_new = |host: usize| {
            new_allocations
                .iter()
                .any(|&(begin, size)| host >= begin && host - begin < size)
        };
        if !has(args.map_type(i), mt::ALWAYS) && !is_new(pointee_begin) && !is_new(pointer_host) {
            return Ok(());
        }
        let lookup = |host_begin: usize, size: i64| {
            let found = table.get_tgt_ptr_begin(&UnmapRequest {
                host_begin,
                size,
                update_refcount: false,
                hold: false,
                must_contain: true,
                force_delete: false,
                unified_shared_memory: usm,
                zero_length: caller.zero_length(size),
                from_data_end: false,
            });
            if let Some(event) = &found.event {
                self.info_map_event(dev.id, event);
            }
            found
        };
        let pointee = lookup(pointee_begin, 0);
        let (Some(pointee_target), false) = (pointee.target, pointee.is_host_ptr) else {
            return Ok(());
        };
        let pointer = lookup(pointer_host, POINTER_SIZE);
        let (Some(pointer_target), false) = (pointer.target, pointer.is_host_ptr) else {
            return Ok(());
        };
        // SAFETY: entry `i` is ATTACH (checked on entry), so by `args`'s
        // contract (`MapArgs::from_raw`) its base holds a pointer.
        let pointer_value = unsafe { *(pointer_host as *const usize) };
        let expected = pointee_target.wrapping_sub(pointee_begin.wrapping_sub(pointer_value));
        let shadow = ShadowPtr {
            host_ptr_value: pointer_value,
            target_ptr_addr: pointer_target,
            target_ptr_value: expected,
        };
        if !table.upsert_shadow(pointer_host, shadow) {
            return Ok(());
        }
        // LLVM 22 submits the update with the pointer's entry: its INFO line
        // is named after the pointer's mapping (looked up before the
        // entry's update lock, as the table's lock comes first).
        let name = self.transfer_name(dev, pointer_host, POINTER_SIZE);
        let _update = pointer.entry.as_ref().map(|e| {
            e.set_may_contain_attached_pointers();
            e.lock_update()
        });
        let value = expected;
        let value_addr = &value as *const usize as usize;
        self.info_transfer(dev, true, value_addr, pointer_target, POINTER_SIZE, name);
        // SAFETY: `value` is a live local of POINTER_SIZE bytes;
        // `pointer_target` is the device copy of the pointer, mapped on
        // `dev` with at least POINTER_SIZE bytes (found just above).
        let copied = self.traced_submit(
            dev,
            pointer_target,
            value_addr,
            POINTER_SIZE as usize,
            || unsafe {
                dev.ops.submit(
                    DevicePtr::from_raw(pointer_target as *mut c_void),
                    value_addr as *const c_void,
                    POINTER_SIZE as usize,
                )
            },
        );
        if copied.is_err() {
            return Err(self.report(OffloadError::CopyToDeviceFailed));
        }
        Ok(())
    }

    /// Print what LLVM prints when `getTargetPointer` refuses a mapping.
    #[inline]
    pub(crate) fn emit_map_failure(&self, failure: &Option<omptarget::mapping::MapFailure>) {
        if let Some(failure) = failure {
            self.print_map_failure(failure);
        }
    }

    #[cold]
    #[inline(never)]
    fn print_map_failure(&self, failure: &omptarget::mapping::MapFailure) {
        for line in failure.messages() {
            self.emit(Diagnostic::Message(line));
        }
        if let Some(report) = failure.report() {
            self.emit(Diagnostic::Error(report.to_string()));
        }
    }

    /// LLVM's `targetDataEnd`: arguments in reverse order; copy back `from`
    /// data of the last reference (or `always`), restore shadowed host
    /// pointers, then free what went away. `args`'s `from` ranges are
    /// writable host memory (`MapArgs::from_raw`'s contract), and so are the
    /// shadowed host pointers restored, which lie inside them.
    pub(crate) fn data_end(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        from_mapper: bool,
    ) -> Result<(), OffloadError> {
        let usm = self.registry.unified_shared_memory();
        let table = dev.ops.mappings();
        let caller = self.caller();
        // On the stack for common regions: a heap block here was a malloc
        // and a free per region (callgrind, `map_tofrom_scalar`).
        let mut settles: SmallVec<[(EntryHandle, usize, i64, bool); 8]> = SmallVec::new();
        let mut from_mapper_base: Option<usize> = None;
        // The copies back go on one queue and complete together, as LLVM's
        // `AsyncInfo` makes them (a remote device answers them in one
        // round trip). What reads the copied host memory waits for them:
        // restoring shadowed pointers, a mapper's function, the settles.
        let mut queue = omptarget::abi::AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        let mut shadows: SmallVec<[(EntryHandle, usize, i64); 8]> = SmallVec::new();

        let copies: Result<(), OffloadError> = 'copies: {
            for i in (0..args.len()).rev() {
                let t = args.map_type(i);
                if has(t, mt::LITERAL) || has(t, mt::PRIVATE) || has(t, mt::ATTACH) {
                    continue;
                }
                if args.mapper(i).is_some() {
                    // The mapper's function reads the host data (its members'
                    // pointers): the copies before it land first.
                    if self
                        .finish_copies_back(dev, &mut queue, &mut shadows)
                        .is_err()
                    {
                        break 'copies Err(self.report(OffloadError::CopyFromDeviceFailed));
                    }
                    if self.data_mapper(dev, args, i, DataOp::End).is_err() {
                        break 'copies Err(self.report(OffloadError::MapperEndFailed));
                    }
                    continue;
                }

                let Section { begin, size, .. } = padded_section(args, i, &caller);
                let implicit = has(t, mt::IMPLICIT);
                let update_ref =
                    (!has(t, mt::MEMBER_OF) || has(t, mt::PTR_AND_OBJ)) && !(from_mapper && i == 0);
                let present = has(t, mt::PRESENT);
                let hold = has(t, mt::OMPX_HOLD);

                let tpr = table.get_tgt_ptr_begin(&UnmapRequest {
                    host_begin: begin,
                    size,
                    update_refcount: update_ref,
                    hold,
                    must_contain: !implicit,
                    force_delete: has(t, mt::DELETE),
                    unified_shared_memory: usm,
                    zero_length: caller.zero_length(size),
                    from_data_end: true,
                });
                if let Some(event) = &tpr.event {
                    self.info_map_event(dev.id, event);
                }
                let Some(target) = tpr.target else {
                    if present {
                        // Only possible on "target exit data": the data must be
                        // there on entry to the construct.
                        break 'copies Err(self.report(OffloadError::PresentMissingOnExit {
                            host_begin: begin,
                            size,
                        }));
                    }
                    continue;
                };

                // A member's mapping belongs to its parent struct.
                let member_only = has(t, mt::MEMBER_OF) && !has(t, mt::PTR_AND_OBJ);
                let del_entry = tpr.is_last && !member_only;
                // Every section found is settled after the copies (LLVM 15+'s
                // post-processing): the last data-end user removes the mapping
                // if its count is still zero, whichever thread saw it last.
                let mut settle_deletes = !member_only && !tpr.is_host_ptr;
                let from = has(t, mt::FROM);
                if !(from || del_entry) {
                    if let Some(entry) = tpr.entry {
                        settles.push((entry, begin, size, settle_deletes));
                    }
                    continue;
                }
                if from
                && (has(t, mt::ALWAYS) || tpr.is_last)
                && !tpr.is_host_ptr
                // SAFETY: `args`'s contract (`MapArgs::from_raw`): a `from`
                // range is writable host memory, not read before the queue
                // is synchronised below;
                // `target` is its device copy on `dev`, freed only after.
                && unsafe { self.retrieve_queued(dev, &mut queue, begin, target, size) }.is_err()
                {
                    break 'copies Err(self.report(OffloadError::CopyFromDeviceFailed));
                }
                if del_entry && from_mapper && i == 0 {
                    from_mapper_base = Some(begin);
                }
                if from_mapper && i == 0 {
                    // A mapper's base: removed with its parent, not here.
                    settle_deletes = false;
                }
                // Host pointers the copy-back overwrites with device addresses
                // are restored once it has landed (`finish_copies_back`).
                if from {
                    if let Some(entry) = &tpr.entry {
                        shadows.push((entry.clone(), begin, size));
                    }
                }
                if let Some(entry) = tpr.entry {
                    settles.push((entry, begin, size, settle_deletes));
                }
            }
            Ok(())
        };
        // Whatever happened, nothing may still be copying into host memory
        // when this returns, nor into device memory the settles free.
        let landed = self.finish_copies_back(dev, &mut queue, &mut shadows);
        copies?;
        if landed.is_err() {
            return Err(self.report(OffloadError::CopyFromDeviceFailed));
        }

        let memory = self.memory(dev);
        for (entry, begin, size, delete) in settles {
            // LLVM 14 keeps what a mapper's base maps at the same address.
            let delete = delete && !(from_mapper_base == Some(begin) && begin != 0);
            if let Some(event) = table.end_data_end(&entry, size, delete, &memory) {
                self.info_map_event(dev.id, &event);
            }
        }
        Ok(())
    }

    /// Wait for the copies back on `queue`, then restore the host pointers
    /// they overwrote with device addresses (`shadows`, in order). The
    /// pointers are forgotten when the mapping is removed
    /// (`end_data_end`), not here: another thread may map the data again
    /// before that, and its copy-back needs them too.
    fn finish_copies_back(
        &self,
        dev: &DeviceCtx<'a>,
        queue: &mut omptarget::abi::AsyncInfo,
        shadows: &mut SmallVec<[(EntryHandle, usize, i64); 8]>,
    ) -> Result<(), crate::OpFailed> {
        // SAFETY: `queue` is the data end's own, which only `dev`'s plugin
        // set (its copies back).
        let synced = unsafe { dev.ops.synchronize_queue(queue) };
        let table = dev.ops.mappings();
        for (entry, begin, size) in shadows.drain(..) {
            table.visit_shadows(Some(&entry), begin, size, |host_ptr_addr, shadow| {
                // SAFETY: a shadowed pointer lies inside the mapped host
                // range `begin..begin+size` (the table visits only those),
                // which is writable host memory (`data_end`'s `args`, by `MapArgs::from_raw`'s contract),
                // and its copy back has landed.
                unsafe { *(host_ptr_addr as *mut usize) = shadow.host_ptr_value };
                ShadowVisit::Keep
            });
        }
        synced
    }
}
#[cfg(test)]
mod tests {
    use super::partial_struct_alignment;

    #[test]
    fn a_partial_struct_is_aligned_as_its_base_up_to_16() {
        assert_eq!(partial_struct_alignment(0x1000), 16);
        assert_eq!(partial_struct_alignment(0x1008), 8);
        assert_eq!(partial_struct_alignment(0x1004), 4);
        assert_eq!(partial_struct_alignment(0x1003), 1);
        assert_eq!(partial_struct_alignment(0), 16);
    }
}
