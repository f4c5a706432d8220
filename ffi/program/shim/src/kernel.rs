//! The launch entries of clang 16 and later: `__tgt_target_kernel` and
//! `__tgt_target_kernel_nowait`, which pass the region's arguments in a
//! `KernelArgsTy` block (versions 1 to 3), plus `__tgt_target_nowait_query`
//! and LLVM 19+'s `__tgt_rtl_init` / `__tgt_rtl_deinit`.
//!
//! The block is decoded here (the C boundary) into the OpenMP layer's
//! `MapArgs` and `KernelLaunch`. Teams and thread counts are
//! three-dimensional from version 2 on; the host plugin, like LLVM's, takes
//! dimension 0. Version 3 kernels (clang 19+) take an implicit leading
//! `dyn_ptr` argument, which the OpenMP layer prepends (null).

use crate::boundary::guard;
use crate::export::export_c;
use crate::session::lifecycle::{with_session, with_session_deferred};
use omptarget_abi::{
    kernel_args::{KERNEL_ARGS_V1, KERNEL_ARGS_V2, KERNEL_ARGS_V3},
    KernelArgsHeader, KernelArgsV1, KernelArgsV2, OFFLOAD_FAIL, OMP_TGT_FAIL, OMP_TGT_SUCCESS,
};
use omptarget_openmp::{Ident, KernelLaunch, Loc, MapArgs, TargetRegion};
use std::ffi::c_void;

/// The raw argument arrays of a block, before `MapArgs` checks them.
#[derive(Debug)]
struct RawArgs {
    num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
}

/// The argument arrays of block `a` (every version names them alike).
macro_rules! raw_args {
    ($num:expr, $a:expr) => {
        RawArgs {
            num: $num,
            base: $a.arg_base_ptrs,
            begin: $a.arg_ptrs,
            sizes: $a.arg_sizes,
            types: $a.arg_types,
            names: $a.arg_names,
            mappers: $a.arg_mappers,
        }
    };
}

/// Decode a `KernelArgsTy` block; `Err` says why it cannot be used.
///
/// `num_teams == -1` means a plain target region (LLVM's `IsTeams`); the
/// block's own counts (version 2+) are what clang asks for, dimension 0.
///
/// # Safety
/// `args` is null or points to a block of the version its header names.
unsafe fn decode(
    num_teams: i32,
    thread_limit: i32,
    args: *const c_void,
) -> Result<(RawArgs, KernelLaunch, bool), String> {
    if args.is_null() {
        return Err("null kernel argument block".into());
    }
    // SAFETY: our `# Safety`: a block starts with its header.
    let header = unsafe { *(args as *const KernelArgsHeader) };
    let num = i32::try_from(header.num_args)
        .map_err(|_| format!("{} kernel arguments", header.num_args))?;
    let teams = num_teams != -1;
    match header.version {
        KERNEL_ARGS_V1 => {
            // SAFETY: our `# Safety`: the header says version 1.
            let a = unsafe { *(args as *const KernelArgsV1) };
            let raw = raw_args!(num, a);
            let launch = KernelLaunch {
                num_teams: if teams { num_teams } else { 1 },
                thread_limit,
                teams,
                tripcount: Some(a.tripcount),
                implicit_dyn_ptr: false,
            };
            Ok((raw, launch, false))
        }
        KERNEL_ARGS_V2 | KERNEL_ARGS_V3 => {
            // SAFETY: our `# Safety`: versions 2 and 3 share this layout.
            let a = unsafe { *(args as *const KernelArgsV2) };
            let raw = raw_args!(num, a);
            let clamp = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
            let launch = KernelLaunch {
                num_teams: if teams { clamp(a.num_teams[0]) } else { 1 },
                thread_limit: clamp(a.thread_limit[0]),
                teams,
                tripcount: Some(a.tripcount),
                implicit_dyn_ptr: header.version >= KERNEL_ARGS_V3,
            };
            Ok((raw, launch, a.flags.no_wait()))
        }
        other => Err(format!("unsupported kernel argument version {other}")),
    }
}

/// The common body of both entries.
///
/// # Safety
/// `loc` is null or a valid `ident_t`; `host_ptr` is the region's host
/// entry; `args` is null or a kernel argument block whose arrays hold
/// `NumArgs` elements each (as clang's generated call guarantees).
unsafe fn launch(
    entry: &'static str,
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> i32 {
    guard(entry, OMP_TGT_FAIL, || {
        // SAFETY: our caller's contract: null or a valid block.
        let (raw, launch, no_wait) = match unsafe { decode(num_teams, thread_limit, args) } {
            Ok(decoded) => decoded,
            Err(why) => {
                eprintln!("Libomptarget error: {entry}: {why}");
                return OMP_TGT_FAIL;
            }
        };
        // SAFETY: our caller's contract: each non-null array of the block
        // holds `NumArgs` elements, valid for this call, and the pointers in
        // them name host memory as the map types say.
        let map = unsafe {
            MapArgs::from_raw(
                raw.num,
                raw.base,
                raw.begin,
                raw.sizes,
                raw.types,
                raw.names,
                raw.mappers,
            )
        };
        match map {
            Some(map) => {
                // SAFETY: our caller's contract: `loc` is null or a valid
                // `ident_t` for this call.
                let loc = unsafe { Loc::from_raw(loc as *const Ident) };
                // SAFETY: our caller's contract: `host_ptr` is the region's
                // host entry, whose kernel takes what the block describes
                // (after `dyn_ptr` from version 3, as `launch` says).
                let region = unsafe { TargetRegion::new(host_ptr, &map, &launch) };
                with_session_deferred(
                    no_wait || entry.ends_with("_nowait"),
                    || OMP_TGT_SUCCESS,
                    |s| s.target_kernel(loc, device_id, region),
                )
            }
            None => {
                eprintln!(
                    "Libomptarget error: {entry}: null argument array with {} arguments",
                    raw.num
                );
                OMP_TGT_FAIL
            }
        }
    })
}

/// `__tgt_target_kernel`: launch a target region described by a
/// `KernelArgsTy` block (clang 16+).
///
/// # Safety
/// As `launch`'s (clang's generated call guarantees it).
unsafe extern "C-unwind" fn __tgt_target_kernel(
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> i32 {
    // SAFETY: our caller's contract is `launch`'s.
    unsafe {
        launch(
            "__tgt_target_kernel",
            loc,
            device_id,
            num_teams,
            thread_limit,
            host_ptr,
            args,
        )
    }
}

/// `__tgt_target_kernel_nowait`: as `__tgt_target_kernel`, run
/// synchronously (the compiler's task already resolved the dependences,
/// and the host plugin has no queue to overlap with).
///
/// # Safety
/// As `launch`'s; the dependence lists are not read.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn __tgt_target_kernel_nowait(
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    // SAFETY: our caller's contract is `launch`'s.
    unsafe {
        launch(
            "__tgt_target_kernel_nowait",
            loc,
            device_id,
            num_teams,
            thread_limit,
            host_ptr,
            args,
        )
    }
}

/// `__tgt_target_nowait_query(void **handle)`: libomp polls a `nowait`
/// region's asynchronous handle. This runtime completes every `nowait`
/// region before returning and never hands out a handle, so a call can only
/// carry a null one (LLVM's fatal error) or one that is not ours.
///
/// # Safety
/// `handle` is null or points to a readable pointer.
unsafe extern "C-unwind" fn __tgt_target_nowait_query(handle: *mut *mut c_void) -> i32 {
    guard("__tgt_target_nowait_query", OFFLOAD_FAIL, || {
        // SAFETY: our caller's contract: null or readable.
        if handle.is_null() || unsafe { *handle }.is_null() {
            omptarget_openmp::Fatal::invalid_async_handle()
                .abort_as(crate::caller::calling_release());
        }
        eprintln!(
            "Libomptarget error: __tgt_target_nowait_query: not a handle of this runtime \
             (its nowait regions complete before they return)"
        );
        OFFLOAD_FAIL
    })
}

/// `__tgt_rtl_init` (LLVM 19+): LLVM's reference-counted start of the
/// runtime. Here the session starts at the first call of any entry and the
/// plugins at the first registration, so this only makes sure the session
/// exists.
extern "C-unwind" fn __tgt_rtl_init() {
    guard("__tgt_rtl_init", (), || with_session(|_| ()))
}

/// `__tgt_rtl_deinit` (LLVM 19+): LLVM's reference-counted end. The
/// runtime here is torn down once, at exit, in its fixed order (see
/// DESIGN.md, "Teardown order"), so an early deinit does nothing.
extern "C-unwind" fn __tgt_rtl_deinit() {
    guard("__tgt_rtl_deinit", (), || ())
}

export_c!(
    __tgt_target_kernel,
    __tgt_target_kernel_nowait,
    __tgt_target_nowait_query,
    __tgt_rtl_init,
    __tgt_rtl_deinit
);

#[cfg(test)]
mod tests {
    use super::*;
    use omptarget_abi::KernelFlags;

    fn v2_block(version: u32) -> KernelArgsV2 {
        KernelArgsV2 {
            version,
            num_args: 2,
            arg_base_ptrs: std::ptr::null_mut(),
            arg_ptrs: std::ptr::null_mut(),
            arg_sizes: std::ptr::null_mut(),
            arg_types: std::ptr::null_mut(),
            arg_names: std::ptr::null_mut(),
            arg_mappers: std::ptr::null_mut(),
            tripcount: 77,
            flags: KernelFlags(0),
            num_teams: [6, 2, 1],
            thread_limit: [3, 1, 1],
            dyn_cgroup_mem: 0,
        }
    }

    #[test]
    fn version_3_takes_dimension_0_and_the_implicit_dyn_ptr() {
        let block = v2_block(3);
        // SAFETY: a live version-3 block.
        let (raw, launch, no_wait) =
            unsafe { decode(6, 3, &block as *const _ as *const c_void) }.unwrap();
        assert_eq!(raw.num, 2);
        assert_eq!(
            launch,
            KernelLaunch {
                num_teams: 6,
                thread_limit: 3,
                teams: true,
                tripcount: Some(77),
                implicit_dyn_ptr: true
            }
        );
        assert!(!no_wait, "the block's flags say no nowait");
        let nowait_block = KernelArgsV2 {
            flags: KernelFlags(1),
            ..block
        };
        // SAFETY: a live version-3 block.
        let (_, _, no_wait) =
            unsafe { decode(6, 3, &nowait_block as *const _ as *const c_void) }.unwrap();
        assert!(no_wait, "a nowait launch is deferred work");
    }

    #[test]
    fn version_2_has_no_dyn_ptr_and_minus_one_teams_is_a_plain_region() {
        let block = v2_block(2);
        // SAFETY: a live version-2 block.
        let (_, launch, _) = unsafe { decode(-1, 0, &block as *const _ as *const c_void) }.unwrap();
        assert!(!launch.teams && !launch.implicit_dyn_ptr);
        assert_eq!(launch.num_teams, 1);
    }

    #[test]
    fn version_1_takes_the_counts_of_the_call() {
        let block = KernelArgsV1 {
            version: 1,
            num_args: 0,
            arg_base_ptrs: std::ptr::null_mut(),
            arg_ptrs: std::ptr::null_mut(),
            arg_sizes: std::ptr::null_mut(),
            arg_types: std::ptr::null_mut(),
            arg_names: std::ptr::null_mut(),
            arg_mappers: std::ptr::null_mut(),
            tripcount: 5,
        };
        // SAFETY: a live version-1 block.
        let (_, launch, _) = unsafe { decode(4, 8, &block as *const _ as *const c_void) }.unwrap();
        assert_eq!((launch.num_teams, launch.thread_limit), (4, 8));
        assert_eq!(launch.tripcount, Some(5));
        assert!(!launch.implicit_dyn_ptr);
    }

    #[test]
    fn unknown_versions_and_null_blocks_are_refused() {
        let block = v2_block(9);
        // SAFETY: a live block (of a version the decoder refuses).
        let err = unsafe { decode(1, 1, &block as *const _ as *const c_void) }.unwrap_err();
        assert_eq!(err, "unsupported kernel argument version 9");
        // SAFETY: null is allowed.
        assert!(unsafe { decode(1, 1, std::ptr::null()) }.is_err());
    }
}
