//! `target update`: copy mapped data to or from the device without changing
//! reference counts, for contiguous sections and for non-contiguous
//! (strided, multi-dimensional) ones (LLVM's `targetDataUpdate`,
//! `targetDataContiguous`, `targetDataNonContiguous`).

use super::args::MapArgs;
use super::data::DataOp;
use super::diag::{Fatal, Loc};
use super::error::OffloadError;
use super::{DeviceCtx, Offload};
use omptarget::abi::{map_type as mt, TargetNonContig};
use omptarget::mapping::{ShadowVisit, UnmapRequest};
use std::ffi::c_void;

const POINTER_SIZE: i64 = std::mem::size_of::<*mut c_void>() as i64;

/// LLVM's `getNonContigMergedDimension`: how many trailing dimensions are
/// contiguous with the one before them.
fn merged_dimensions(dims: &[TargetNonContig]) -> usize {
    (1..dims.len())
        .rev()
        .filter(|&i| dims[i].count.wrapping_mul(dims[i].stride) == dims[i - 1].stride)
        .count()
}

impl<'a> Offload<'a> {
    /// `__tgt_target_data_update_mapper`. Safe: `args` carries the call's
    /// contract (`MapArgs::from_raw`), NON_CONTIG descriptors included.
    pub fn target_data_update(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
    ) -> Result<(), Fatal> {
        self.target_data_update_as(loc, device_id, args, false)
    }

    /// `__tgt_target_data_update_mapper` or its `_nowait` variant.
    pub fn target_data_update_as(
        &self,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
        nowait: bool,
    ) -> Result<(), Fatal> {
        let _span = omptarget::profile::span(omptarget::profile::Kind::Mapping, "target update");
        let op = |dev: &DeviceCtx<'a>| self.data_update(dev, args, false);
        let region = super::info::InfoRegion::DataUpdate { nowait };
        self.data_entry(
            loc,
            device_id,
            args,
            super::ompt::RegionKind::Update,
            region,
            op,
        )
    }

    /// LLVM's `targetDataUpdate`. By `args`'s contract
    /// (`MapArgs::from_raw`), its `to` ranges are readable and `from` ranges
    /// writable host memory (for NON_CONTIG, the pieces its descriptors
    /// name), and its NON_CONTIG begin pointers are arrays of `size`
    /// dimension descriptors.
    pub(crate) fn data_update(
        &self,
        dev: &DeviceCtx<'a>,
        args: &MapArgs<'_>,
        _from_mapper: bool,
    ) -> Result<(), OffloadError> {
        for i in 0..args.len() {
            let t = args.map_type(i);
            if t & (mt::LITERAL | mt::PRIVATE | mt::ATTACH) != 0 {
                continue;
            }
            if args.mapper(i).is_some() {
                if self.data_mapper(dev, args, i, DataOp::Update).is_err() {
                    return Err(self.report(OffloadError::MapperUpdateFailed));
                }
                continue;
            }
            if t & mt::NON_CONTIG != 0 {
                // SAFETY: `args`'s contract (`MapArgs::from_raw`): a
                // NON_CONTIG begin is an array of `size` descriptors naming
                // host memory of the argument.
                unsafe {
                    self.update_non_contiguous(
                        dev,
                        args.base(i) as usize,
                        args.begin(i),
                        args.size(i),
                        t,
                    )
                }?;
            } else {
                // SAFETY: `args`'s contract (`MapArgs::from_raw`): the
                // argument's range is host memory readable (`to`) or
                // writable (`from`).
                unsafe { self.update_contiguous(dev, args.begin(i) as usize, args.size(i), t) }?;
            }
        }
        Ok(())
    }

    /// LLVM's `targetDataNonContiguous`: update the pieces that
    /// `dim_count` descriptors at `descriptors` cut out of `base`.
    ///
    /// # Safety
    /// `descriptors` is null or an array of (the low 32 bits of)
    /// `dim_count` dimension descriptors; the pieces they name from `base`
    /// are host memory as `update_contiguous` asks for `map_type`.
    unsafe fn update_non_contiguous(
        &self,
        dev: &DeviceCtx<'a>,
        base: usize,
        descriptors: *mut c_void,
        dim_count: i64,
        map_type: i64,
    ) -> Result<(), OffloadError> {
        // LLVM reads the count as int32_t and indexes [count - 1].
        let count = dim_count as i32;
        if count <= 0 || descriptors.is_null() {
            return Ok(());
        }
        // SAFETY: our `# Safety`: non-null (checked) `descriptors` is an
        // array of `count` (> 0, checked) descriptors, used only here.
        let dims = unsafe {
            std::slice::from_raw_parts(descriptors as *const TargetNonContig, count as usize)
        };
        let last = dims[dims.len() - 1];
        let size = last.count.wrapping_mul(last.stride);
        let used = dims.len() - merged_dimensions(dims);
        // SAFETY: our `# Safety`: the pieces `dims` names from `base` are
        // host memory as `update_contiguous` asks.
        unsafe { self.update_dimension(dev, base, &dims[..used], size, map_type, 0) }
    }

    /// One level of LLVM's `targetDataNonContiguous` recursion: walk
    /// dimension `dims[0]`, and at the bottom copy one contiguous piece.
    ///
    /// # Safety
    /// Every piece of `size` bytes that `dims` names from `base + offset`
    /// is host memory as `update_contiguous` asks for `map_type`.
    unsafe fn update_dimension(
        &self,
        dev: &DeviceCtx<'a>,
        base: usize,
        dims: &[TargetNonContig],
        size: u64,
        map_type: i64,
        offset: u64,
    ) -> Result<(), OffloadError> {
        let Some((dim, rest)) = dims.split_first() else {
            let piece = base.wrapping_add(offset as usize);
            // SAFETY: our `# Safety`: `piece` is one of the pieces named.
            return unsafe { self.update_contiguous(dev, piece, size as i64, map_type) };
        };
        for i in 0..dim.count {
            // The last dimension is contiguous: its first element covers it.
            if !rest.is_empty() || i == 0 {
                let here = dim.offset.wrapping_add(i).wrapping_mul(dim.stride);
                // SAFETY: our `# Safety`: the pieces `rest` names from the
                // new offset are among those `dims` names.
                unsafe {
                    self.update_dimension(
                        dev,
                        base,
                        rest,
                        size,
                        map_type,
                        offset.wrapping_add(here),
                    )
                }?;
            }
        }
        Ok(())
    }

    /// LLVM's `targetDataContiguous`.
    ///
    /// # Safety
    /// `begin..begin+size` is readable host memory when `map_type` has TO
    /// and writable host memory when it has FROM.
    unsafe fn update_contiguous(
        &self,
        dev: &DeviceCtx<'a>,
        begin: usize,
        size: i64,
        map_type: i64,
    ) -> Result<(), OffloadError> {
        let table = dev.ops.mappings();
        let tpr = table.get_tgt_ptr_begin(&UnmapRequest {
            host_begin: begin,
            size,
            update_refcount: false,
            hold: false,
            must_contain: true,
            force_delete: false,
            unified_shared_memory: self.registry.unified_shared_memory(),
            zero_length: self.caller().zero_length(size),
            from_data_end: false,
        });
        if let Some(event) = &tpr.event {
            self.info_map_event(dev.id, event);
        }
        let Some(target) = tpr.target else {
            if map_type & mt::PRESENT != 0 {
                return Err(self.report(OffloadError::PresentMotionMissing {
                    host_begin: begin,
                    size,
                }));
            }
            return Ok(());
        };
        if tpr.is_host_ptr {
            return Ok(());
        }

        if map_type & mt::FROM != 0 {
            // SAFETY: our `# Safety`: the range is writable host memory;
            // `target` is its device copy on `dev` (`must_contain`).
            if unsafe { self.retrieve(dev, begin, target, size) }.is_err() {
                return Err(self.report(OffloadError::CopyFromDeviceFailed));
            }
            table.visit_shadows(tpr.entry.as_ref(), begin, size, |host_ptr_addr, shadow| {
                // SAFETY: the table visits only shadowed pointers inside
                // `begin..begin+size`, writable host memory (our `# Safety`).
                unsafe { *(host_ptr_addr as *mut usize) = shadow.host_ptr_value };
                ShadowVisit::Keep
            });
        }

        if map_type & mt::TO != 0 {
            // SAFETY: our `# Safety`: the range is readable host memory;
            // `target` is its device copy on `dev` (`must_contain`).
            if unsafe { self.submit(dev, target, begin, size) }.is_err() {
                return Err(self.report(OffloadError::CopyToDeviceFailed));
            }
            // Re-attach device pointers the copy overwrote with host values.
            // LLVM reports a failure here but the update still succeeds.
            table.visit_shadows(tpr.entry.as_ref(), begin, size, |_, shadow| {
                let value = shadow.target_ptr_value;
                // SAFETY: `value` is a live local of POINTER_SIZE bytes;
                // `target_ptr_addr` is the device copy of a pointer inside
                // this mapping, on `dev`.
                let copied = unsafe {
                    self.submit(
                        dev,
                        shadow.target_ptr_addr,
                        &value as *const usize as usize,
                        POINTER_SIZE,
                    )
                };
                if copied.is_err() {
                    self.report(OffloadError::CopyToDeviceFailed);
                    ShadowVisit::Stop
                } else {
                    ShadowVisit::Keep
                }
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(offset: u64, count: u64, stride: u64) -> TargetNonContig {
        TargetNonContig {
            offset,
            count,
            stride,
        }
    }

    #[test]
    fn merged_dimensions_counts_contiguous_tails() {
        // int a[4][5] updating a[0:4][0:5]: rows are contiguous.
        assert_eq!(merged_dimensions(&[d(0, 4, 20), d(0, 5, 4)]), 1);
        // a[0:4][1:2]: strided rows.
        assert_eq!(merged_dimensions(&[d(0, 4, 20), d(1, 2, 4)]), 0);
        assert_eq!(merged_dimensions(&[d(0, 3, 8)]), 0);
    }
}
