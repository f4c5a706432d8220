//! Target regions: translate the arguments (mapped data, literals,
//! (first-)private buffers, lambda captures), launch the kernel, then unmap
//! (LLVM's `target`, `processDataBefore`, `processDataAfter`,
//! `PrivateArgumentManagerTy`), plus the `__tgt_target*` entry points and
//! loop trip counts.

use super::args::{parent_index, MapArgs};
use super::diag::{Fatal, Ident, Loc};
use super::error::OffloadError;
use super::info::InfoRegion;
use super::ompt::RegionKind;
use super::registry::MissingEntry;
use super::{DeviceCtx, Offload};
use omptarget::abi::{map_type as mt, AllocKind, OMP_TGT_FAIL, OMP_TGT_SUCCESS};
use omptarget::device::DevicePtr;
use omptarget::mapping::UnmapRequest;
use smallvec::SmallVec;
use std::ffi::c_void;

/// Kernel arguments kept inline (on the stack) before spilling to the heap.
const INLINE_ARGS: usize = 16;
type KernelArgs = SmallVec<[*mut c_void; INLINE_ARGS]>;
type KernelOffsets = SmallVec<[isize; INLINE_ARGS]>;

const ALIGNMENT: i64 = 8;
/// LLVM 19's `MaxAlignment`: the alignment the packing buffer starts with.
const MAX_PACK_ALIGNMENT: usize = 16;
const POINTER_SIZE: i64 = std::mem::size_of::<*mut c_void>() as i64;
/// First-private arguments up to this size are packed into one buffer.
const FIRST_PRIVATE_PACK_THRESHOLD: i64 = 1024;
const LAMBDA_MAPPING: i64 = mt::PTR_AND_OBJ | mt::LITERAL | mt::IMPLICIT;

/// A first-private argument waiting to be packed.
struct PackedArg {
    /// Its position in the kernel argument array.
    index: usize,
    host_begin: usize,
    size: i64,
    /// Bytes of the buffer left before it (LLVM 19's `Padding`).
    padding: i64,
    /// Bytes of the buffer it takes after its padding: LLVM 14 pads each
    /// packed argument to `size + size % 8` (sic); LLVM 19 takes `size`.
    slot_size: i64,
    /// The alignment LLVM 19 assumes its start has (`StartAlignment`).
    start_alignment: usize,
}

/// Where LLVM 19's `addArg` puts a packed argument at `host_begin` after
/// `last`: its padding and the alignment its start is taken to have. The
/// start alignment of the previous argument shrinks to its size modulo
/// that alignment (LLVM's own heuristic, kept as it is: the buffer's
/// layout is what the device code sees).
fn packed_placement(last: Option<&PackedArg>, host_begin: usize) -> (i64, usize) {
    let Some(last) = last else {
        return (0, MAX_PACK_ALIGNMENT);
    };
    let mut start = last.start_alignment;
    let offset = (last.size as usize) % start;
    if offset != 0 {
        start = offset;
    }
    // `partial_struct_alignment` is a power of two already (bit_floor).
    let required = super::data::partial_struct_alignment(host_begin);
    if required > start {
        ((required - start) as i64, required)
    } else {
        (0, start)
    }
}

/// Device buffers of (first-)private arguments of one target region.
struct PrivateArguments<'o, 'a> {
    offload: &'o Offload<'a>,
    dev: &'o DeviceCtx<'a>,
    /// Device buffers to free after the region.
    buffers: Vec<usize>,
    packed: Vec<PackedArg>,
    packed_size: i64,
    /// The calling binary's release, asked when an argument is packed.
    caller: super::release::CallerRelease<'a>,
}

impl<'o, 'a> PrivateArguments<'o, 'a> {
    fn new(offload: &'o Offload<'a>, dev: &'o DeviceCtx<'a>) -> Self {
        PrivateArguments {
            offload,
            dev,
            buffers: Vec::new(),
            packed: Vec::new(),
            packed_size: 0,
            caller: offload.caller(),
        }
    }

    /// LLVM's `addArg`: allocate (and for first-private, fill) a device
    /// buffer now, or queue a small first-private argument for packing.
    /// Returns the device address, or 0 as a placeholder for packed ones.
    ///
    /// # Safety
    /// For a first-private argument, `host_begin..host_begin+size` is
    /// readable host memory, now (when sent at once) and until
    /// [`PrivateArguments::pack_and_transfer`] (when queued).
    unsafe fn add(
        &mut self,
        host_begin: usize,
        size: i64,
        first_private: bool,
        index: usize,
        alloc_immediately: bool,
    ) -> Result<usize, OffloadError> {
        // A negative size can only be garbage; LLVM would try to allocate it.
        if size < 0 {
            return Err(OffloadError::PrivateAllocFailed);
        }
        if size > FIRST_PRIVATE_PACK_THRESHOLD || !first_private || alloc_immediately {
            // SAFETY: `host_begin` is the argument's host address (the
            // program's, per this function's contract).
            let target = unsafe {
                self.offload.dev_alloc(
                    self.dev,
                    size as usize,
                    host_begin as *mut c_void,
                    AllocKind::Default,
                )
            }
            .map(|p| p.addr())
            .ok()
            .filter(|&p| p != 0)
            .ok_or(OffloadError::PrivateAllocFailed)?;
            if first_private
                // SAFETY: our `# Safety`: a first-private argument's host
                // range is readable; `target` was just allocated on
                // `self.dev` with `size` bytes.
                && unsafe { self.offload.submit(self.dev, target, host_begin, size) }.is_err()
            {
                // LLVM leaks this buffer; we free it with the others.
                self.buffers.push(target);
                return Err(OffloadError::PrivateAllocFailed);
            }
            self.buffers.push(target);
            Ok(target)
        } else {
            // Asked once per region, and only when an argument is packed.
            let aligned = self.caller.get().packs_first_private_aligned();
            let (padding, slot_size, start_alignment) = if aligned {
                let (padding, start) = packed_placement(self.packed.last(), host_begin);
                (padding, size, start)
            } else {
                (0, size + size % ALIGNMENT, ALIGNMENT as usize)
            };
            self.packed.push(PackedArg {
                index,
                host_begin,
                size,
                padding,
                slot_size,
                start_alignment,
            });
            self.packed_size += padding + slot_size;
            Ok(0)
        }
    }

    /// LLVM's `packAndTransfer`: copy the queued first-private arguments
    /// into one buffer, send it, and fill in their kernel arguments.
    ///
    /// # Safety
    /// Each queued argument's host range is still readable (as
    /// [`PrivateArguments::add`] asks); `kernel_args` holds each queued
    /// argument's index.
    unsafe fn pack_and_transfer(
        &mut self,
        kernel_args: &mut [*mut c_void],
    ) -> Result<(), OffloadError> {
        if self.packed.is_empty() {
            return Ok(());
        }
        let mut buffer = vec![0u8; self.packed_size as usize];
        let mut at = 0usize;
        for arg in &self.packed {
            at += arg.padding as usize;
            // SAFETY: our `# Safety`: `host_begin..+size` is readable host
            // memory; `buffer` holds `packed_size`, the sum of the paddings
            // and slot sizes (each slot >= its size), so `at..at+size` is in
            // it, and a fresh Vec overlaps no host argument.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    arg.host_begin as *const u8,
                    buffer.as_mut_ptr().add(at),
                    arg.size as usize,
                )
            };
            at += arg.slot_size as usize;
        }
        // SAFETY: `buffer` is this value's own packing buffer, alive until
        // the region has its copy.
        let target = unsafe {
            self.offload.dev_alloc(
                self.dev,
                buffer.len(),
                buffer.as_mut_ptr() as *mut c_void,
                AllocKind::Default,
            )
        }
        .map(|p| p.addr())
        .ok()
        .filter(|&p| p != 0)
        .ok_or(OffloadError::PrivatePackFailed)?;
        self.buffers.push(target);
        // SAFETY: `buffer` is a live Vec of `buffer.len()` readable bytes;
        // `target` was just allocated on `self.dev` with that many bytes.
        unsafe {
            self.offload.submit(
                self.dev,
                target,
                buffer.as_ptr() as usize,
                buffer.len() as i64,
            )
        }
        .map_err(|_| OffloadError::PrivatePackFailed)?;
        let mut address = target;
        for arg in &self.packed {
            address += arg.padding as usize;
            kernel_args[arg.index] = address as *mut c_void;
            address += arg.slot_size as usize;
        }
        Ok(())
    }

    /// LLVM's `free`: release every buffer.
    fn free(&mut self) -> Result<(), OffloadError> {
        for buffer in std::mem::take(&mut self.buffers) {
            // SAFETY: a buffer this value allocated for the region's
            // private arguments; the region has completed.
            if unsafe {
                self.offload
                    .dev_free(self.dev, DevicePtr::from_raw(buffer as *mut c_void))
            }
            .is_err()
            {
                return Err(OffloadError::PrivateFreeFailed);
            }
        }
        Ok(())
    }
}

impl Drop for PrivateArguments<'_, '_> {
    /// On failure paths LLVM leaks the buffers; we give them back.
    fn drop(&mut self) {
        for buffer in std::mem::take(&mut self.buffers) {
            // SAFETY: a buffer this value allocated; on this failure path
            // no region runs with it any more.
            let _ = unsafe {
                self.dev
                    .ops
                    .free(DevicePtr::from_raw(buffer as *mut c_void))
            };
        }
    }
}

/// How one target region is launched: what the legacy `__tgt_target*`
/// entries pass as arguments, and what `__tgt_target_kernel`'s argument
/// block (LLVM 16+) adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLaunch {
    /// Teams requested (dimension 0; the host plugin, like LLVM's, runs
    /// one team whatever the count).
    pub num_teams: i32,
    /// Threads per team requested (dimension 0).
    pub thread_limit: i32,
    /// A teams region (`run_team_region`) rather than a plain one.
    pub teams: bool,
    /// The loop trip count the argument block carries; `None` for the
    /// legacy entries, whose count comes from
    /// `__kmpc_push_target_tripcount`.
    pub tripcount: Option<u64>,
    /// Pass the implicit leading `dyn_ptr` argument (null: no dynamic group
    /// memory), which kernels of an argument block of version 3 or later
    /// (clang 19+) take before the mapped arguments. The plugin passes
    /// arguments through unchanged, so the OpenMP layer prepends it.
    pub implicit_dyn_ptr: bool,
}

impl KernelLaunch {
    /// A launch of the legacy `__tgt_target[_teams]*` entries (clang 14).
    pub const fn legacy(num_teams: i32, thread_limit: i32, teams: bool) -> Self {
        KernelLaunch {
            num_teams,
            thread_limit,
            teams,
            tripcount: None,
            implicit_dyn_ptr: false,
        }
    }
}

/// A target region's kernel bound to the arguments it is launched with,
/// made once where the call is decoded (the C boundary), so that running
/// it is safe.
#[derive(Debug, Clone, Copy)]
pub struct TargetRegion<'r, 'a> {
    host_ptr: *mut c_void,
    args: &'r MapArgs<'a>,
    launch: &'r KernelLaunch,
}

impl<'r, 'a> TargetRegion<'r, 'a> {
    /// The region of `host_ptr`, launched with `args` and `launch`.
    ///
    /// # Safety
    /// `host_ptr` is either no host entry of a registered binary (the
    /// launch then fails, with nothing run) or one whose kernel takes the
    /// arguments `args` describes, after a leading `void *` when
    /// `launch.implicit_dyn_ptr` (as clang's generated call guarantees).
    pub unsafe fn new(
        host_ptr: *mut c_void,
        args: &'r MapArgs<'a>,
        launch: &'r KernelLaunch,
    ) -> Self {
        TargetRegion {
            host_ptr,
            args,
            launch,
        }
    }
}

impl<'a> Offload<'a> {
    /// `__tgt_target_mapper` (`teams == false`) and
    /// `__tgt_target_teams_mapper` (`teams == true`): run a target region.
    /// Returns `OMP_TGT_FAIL` when the host must run the region instead
    /// (offload disabled, host device, or a tolerated failure), otherwise
    /// `OMP_TGT_SUCCESS`; `Err` is a fatal error to print and abort with.
    ///
    /// # Safety
    /// `loc` is null or a valid `ident_t` (as [`Loc::from_raw`] asks);
    /// `host_ptr` and `args` as [`TargetRegion::new`] asks.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target(
        &self,
        loc: *const Ident,
        device_id: i64,
        host_ptr: *mut c_void,
        args: &MapArgs<'_>,
        num_teams: i32,
        thread_limit: i32,
        teams: bool,
    ) -> Result<i32, Fatal> {
        let launch = KernelLaunch::legacy(num_teams, thread_limit, teams);
        // SAFETY: our `# Safety`: `loc` is null or a valid `ident_t` (for
        // this call, which is all `Loc` asks).
        let loc = unsafe { Loc::from_raw(loc) };
        // SAFETY: our `# Safety`: `host_ptr` is the region's host entry,
        // whose kernel takes what `args` describes (no `dyn_ptr`: legacy).
        let region = unsafe { TargetRegion::new(host_ptr, args, &launch) };
        self.target_kernel(loc, device_id, region)
    }

    /// `__tgt_target_kernel[_nowait]` (clang 16+), once the shim decoded
    /// the argument block into `region`; as [`Offload::target`] otherwise.
    pub fn target_kernel(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        region: TargetRegion<'_, '_>,
    ) -> Result<i32, Fatal> {
        // The region: its mappings, the launch and the copies back.
        let _span = omptarget::profile::span(omptarget::profile::Kind::Launch, "target");
        let _ompt = self.ompt_call();
        let Some(dev) = self.check_device_and_ctors(device_id, loc)? else {
            return Ok(OMP_TGT_FAIL);
        };
        self.info_kernel_arguments(loc, dev.id.into(), region.args, InfoRegion::Kernel);
        self.ompt_region_begin(RegionKind::Target, &dev);
        let ok = self.run_target(&dev, region).is_ok();
        self.handle_target_outcome(ok, loc)?;
        self.ompt_region_end(RegionKind::Target, &dev);
        Ok(OMP_TGT_SUCCESS)
    }

    /// `__kmpc_push_target_tripcount_mapper`: remember the trip count of the
    /// next teams region this host thread launches on the device.
    pub fn push_target_tripcount(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        loop_tripcount: u64,
    ) -> Result<(), Fatal> {
        let Some(dev) = self.check_device_and_ctors(device_id, loc)? else {
            return Ok(());
        };
        let thread = self.host.global_thread_num();
        dev.slot.push_tripcount(thread, loop_tripcount);
        Ok(())
    }

    /// LLVM's `getLoopTripCount`: take this thread's trip count (0 if none).
    fn take_tripcount(&self, dev: &DeviceCtx<'a>) -> u64 {
        let thread = self.host.global_thread_num();
        dev.slot.take_tripcount(thread)
    }

    /// LLVM's `target`: everything after the device checks. `region`
    /// binds the kernel (a region's, or a ctor/dtor's) to its arguments.
    pub(crate) fn run_target(
        &self,
        dev: &DeviceCtx<'a>,
        region: TargetRegion<'_, '_>,
    ) -> Result<(), OffloadError> {
        let TargetRegion {
            host_ptr,
            args,
            launch,
        } = region;
        let entry = self
            .registry
            .target_entry(host_ptr as usize, dev.id as usize);
        let entry = match entry {
            Ok(entry) => entry,
            Err(MissingEntry::NoHostEntry) => {
                return Err(self.report(OffloadError::NoMatchingTargetPointer {
                    host_ptr: host_ptr as usize,
                }))
            }
            Err(MissingEntry::NoTargetTable) => {
                return Err(self.report(OffloadError::TargetTableMissing { device: dev.id }))
            }
        };

        // One kernel argument per TARGET_PARAM map entry, so at most
        // `args.len()`: no regrowth while filling them.
        // On the stack for up to INLINE_ARGS arguments: a kernel that leaves
        // by siglongjmp skips this frame, and a heap block would be lost.
        // Built in place: `with_capacity` returns the 136-byte vectors by
        // value, two `memcpy` calls per launch (callgrind, `empty_region`).
        let mut kernel_args = KernelArgs::new();
        let mut offsets = KernelOffsets::new();
        if args.len() > INLINE_ARGS {
            kernel_args.reserve_exact(args.len());
            offsets.reserve_exact(args.len());
        }
        let mut privates = PrivateArguments::new(self, dev);
        if launch.implicit_dyn_ptr {
            // LLVM passes null without dynamic group memory, which the host
            // plugin has none of.
            kernel_args.push(std::ptr::null_mut());
            offsets.push(0);
        }

        if !args.is_empty()
            && self
                .process_data_before(dev, args, &mut kernel_args, &mut offsets, &mut privates)
                .is_err()
        {
            return Err(self.report(OffloadError::ProcessDataBeforeFailed));
        }

        let teams = launch.teams;
        let (num_teams, thread_limit) = (launch.num_teams, launch.thread_limit);
        let tripcount = match launch.tripcount {
            Some(count) => count,
            None if teams => self.take_tripcount(dev),
            None => 0,
        };
        // What LLVM 15+'s plugin says as it launches (INFO 0x10).
        self.info_kernel_launch(dev.slot.local as i32, launch, || {
            self.registry
                .host_entry_name(host_ptr as usize)
                .unwrap_or_default()
        });
        // No lock of ours is held from here to the kernel's end.
        let mut launched = None;
        // LLVM's submit callbacks: the teams dimension 0 it launches with
        // (1 for a plain region).
        let submitted_teams = if teams { num_teams as u32 } else { 1 };
        let tracer = self.tracer();
        let mut launch_kernel = || {
            self.host.kernel_section(&mut || {
                launched = Some(if teams {
                    // SAFETY: `entry` is the entry of `host_ptr` in the table
                    // loaded on `dev` (`target_entry`); the arguments are what
                    // `process_data_before` built from `args`, which describes
                    // the kernel's arguments (`TargetRegion::new`'s contract).
                    unsafe {
                        dev.ops.run_team_region(
                            entry.addr as *mut c_void,
                            &mut kernel_args,
                            &mut offsets,
                            num_teams,
                            thread_limit,
                            tripcount,
                        )
                    }
                } else {
                    // SAFETY: as for the teams region above.
                    unsafe {
                        dev.ops.run_region(
                            entry.addr as *mut c_void,
                            &mut kernel_args,
                            &mut offsets,
                        )
                    }
                });
            })
        };
        match tracer {
            Some(tracer) => tracer.submit(submitted_teams, launch_kernel),
            None => launch_kernel(),
        }
        if !matches!(launched, Some(Ok(_))) {
            return Err(self.report(OffloadError::ExecutionFailed));
        }

        if !args.is_empty() && self.process_data_after(dev, args, &mut privates).is_err() {
            return Err(self.report(OffloadError::ProcessDataAfterFailed));
        }
        Ok(())
    }

    /// LLVM's `processDataBefore`. By `args`'s contract
    /// (`MapArgs::from_raw`) each entry's host range is host memory as its
    /// map type says (a PTR_AND_OBJ base holds a pointer, a first-private
    /// range is readable).
    fn process_data_before(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        kernel_args: &mut KernelArgs,
        offsets: &mut KernelOffsets,
        privates: &mut PrivateArguments<'_, 'a>,
    ) -> Result<(), OffloadError> {
        if self.data_begin(dev, args, false).is_err() {
            return Err(self.report(OffloadError::TargetDataBeginFailed));
        }
        let usm = self.registry.unified_shared_memory();
        let table = dev.ops.mappings();
        let caller = self.caller();
        // Kernel argument position of each map entry, for lambda captures
        // to find their parent's; most regions have none, so no buffer.
        let has_lambda_captures = (0..args.len()).any(|i| {
            let t = args.map_type(i);
            t & mt::TARGET_PARAM == 0 && t & LAMBDA_MAPPING == LAMBDA_MAPPING
        });
        let mut positions: Vec<Option<usize>> = if has_lambda_captures {
            vec![None; args.len()]
        } else {
            Vec::new()
        };

        for i in 0..args.len() {
            let t = args.map_type(i);
            if t & mt::TARGET_PARAM == 0 {
                if t & LAMBDA_MAPPING == LAMBDA_MAPPING {
                    self.attach_lambda_capture(dev, args, i, kernel_args, offsets, &positions)?;
                }
                continue;
            }
            let begin = args.begin(i) as usize;
            let mut base = args.base(i) as usize;
            let (target, offset) = if t & mt::LITERAL != 0 {
                (base, 0isize)
            } else if t & mt::PRIVATE != 0 {
                let offset = base.wrapping_sub(begin) as isize;
                let first_private = t & mt::TO != 0;
                let alloc_immediately =
                    i + 1 < args.len() && args.map_type(i + 1) & mt::MEMBER_OF != 0;
                // SAFETY: `args`'s contract (`MapArgs::from_raw`): a
                // first-private entry's range is readable, and stays so (for
                // the view's lifetime) until `pack_and_transfer` below.
                match unsafe {
                    privates.add(
                        begin,
                        args.size(i),
                        first_private,
                        kernel_args.len(),
                        alloc_immediately,
                    )
                } {
                    Ok(target) => (target, offset),
                    Err(_) => {
                        return Err(self.report(OffloadError::PrivateArgumentFailed {
                            first_private,
                            host_ptr: begin,
                        }))
                    }
                }
            } else {
                if t & mt::PTR_AND_OBJ != 0 {
                    // SAFETY: `args`'s contract (`MapArgs::from_raw`): a
                    // PTR_AND_OBJ entry's base is host memory holding a
                    // pointer (LLVM reads it too).
                    base = unsafe { *(base as *const usize) };
                }
                let size = args.size(i);
                let tpr = table.get_tgt_ptr_begin(&UnmapRequest {
                    host_begin: begin,
                    size,
                    update_refcount: false,
                    hold: false,
                    must_contain: false,
                    force_delete: false,
                    unified_shared_memory: usm,
                    zero_length: caller.zero_length(size),
                    from_data_end: false,
                });
                if let Some(event) = &tpr.event {
                    self.info_map_event(dev.id, event);
                }
                // Data the table does not know (a pointer to memory of
                // `omp_target_alloc`, captured implicitly): null for LLVM 14,
                // the host value for LLVM 19+.
                let target = match tpr.target {
                    Some(target) => target,
                    None if caller.get().unmapped_argument_is_host_ptr() => begin,
                    None => 0,
                };
                (target, base.wrapping_sub(begin) as isize)
            };
            if let Some(position) = positions.get_mut(i) {
                *position = Some(kernel_args.len());
            }
            kernel_args.push(target as *mut c_void);
            offsets.push(offset);
        }

        // SAFETY: the queued arguments' ranges are still readable
        // (`args`'s contract) and `add` was given their `kernel_args` indices.
        unsafe { privates.pack_and_transfer(kernel_args) }
    }

    /// A lambda's captured pointer (PTR_AND_OBJ | LITERAL | IMPLICIT member
    /// of the lambda argument): make the device copy of the lambda point at
    /// the device copy of the captured data. `kernel_args`/`offsets`/
    /// `positions` are what `process_data_before` built for the entries
    /// before `i` (only device addresses: nothing of the host is read).
    fn attach_lambda_capture(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        i: usize,
        kernel_args: &[*mut c_void],
        offsets: &[isize],
        positions: &[Option<usize>],
    ) -> Result<(), OffloadError> {
        // LLVM asserts these; a malformed call is ignored here.
        let Ok(parent) = usize::try_from(parent_index(args.map_type(i))) else {
            return Ok(());
        };
        let Some(&Some(position)) = positions.get(parent) else {
            return Ok(());
        };
        let host_value = args.begin(i) as usize;
        let host_begin = args.base(i) as usize;
        let host_base = args.begin(parent) as usize;
        let target_base = (kernel_args[position] as usize).wrapping_add(offsets[position] as usize);
        let target_begin = target_base.wrapping_add(host_begin.wrapping_sub(host_base));
        let size = args.size(i);
        let tpr = dev.ops.mappings().get_tgt_ptr_begin(&UnmapRequest {
            host_begin: host_value,
            size,
            update_refcount: false,
            hold: false,
            must_contain: false,
            force_delete: false,
            unified_shared_memory: self.registry.unified_shared_memory(),
            zero_length: self.caller().zero_length(size),
            from_data_end: false,
        });
        if let Some(event) = &tpr.event {
            self.info_map_event(dev.id, event);
        }
        let Some(pointee) = tpr.target else {
            return Ok(());
        };
        if tpr.is_host_ptr {
            return Ok(());
        }
        let value = pointee;
        // SAFETY: `value` is a live local of POINTER_SIZE readable bytes;
        // `target_begin` is inside the device copy of the parent lambda,
        // mapped on `dev` (its kernel argument plus the member's offset, as
        // LLVM computes it).
        if unsafe {
            self.submit(
                dev,
                target_begin,
                &value as *const usize as usize,
                POINTER_SIZE,
            )
        }
        .is_err()
        {
            return Err(self.report(OffloadError::CopyToDeviceFailed));
        }
        Ok(())
    }

    /// LLVM's `processDataAfter`.
    fn process_data_after(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        privates: &mut PrivateArguments<'_, 'a>,
    ) -> Result<(), OffloadError> {
        if self.data_end(dev, args, false).is_err() {
            return Err(self.report(OffloadError::TargetDataEndFailed));
        }
        if privates.free().is_err() {
            return Err(self.report(OffloadError::PrivateFreeFailed));
        }
        Ok(())
    }
}

#[cfg(test)]
mod packing_tests {
    use super::{packed_placement, PackedArg};

    fn arg(size: i64, padding: i64, start_alignment: usize) -> PackedArg {
        PackedArg {
            index: 0,
            host_begin: 0,
            size,
            padding,
            slot_size: size,
            start_alignment,
        }
    }

    #[test]
    fn packed_arguments_keep_their_host_alignment_as_llvm_19_places_them() {
        // The first starts the 16-aligned buffer.
        assert_eq!(packed_placement(None, 0x1003), (0, 16));
        // 3 bytes at a 16-aligned start: an 8-aligned array pads 5.
        assert_eq!(packed_placement(Some(&arg(3, 0, 16)), 0x2008), (5, 8));
        // 16 bytes after an 8-aligned start end 8-aligned: a 16-aligned
        // array pads 8; an 8-aligned one none.
        assert_eq!(packed_placement(Some(&arg(16, 5, 8)), 0x3010), (8, 16));
        assert_eq!(packed_placement(Some(&arg(16, 5, 8)), 0x3008), (0, 8));
        // A byte array needs none: the start alignment shrinks to 3.
        assert_eq!(packed_placement(Some(&arg(3, 0, 16)), 0x4001), (0, 3));
    }
}
