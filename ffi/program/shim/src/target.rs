//! `__tgt_target` / `__tgt_target_teams` in all variants, and the loop trip
//! count the compiler pushes before a teams launch.

use crate::boundary::guard;
use crate::export::export_c;
use crate::session::lifecycle::{with_session, with_session_deferred};
use crate::session::Teams;
use omptarget_abi::{OMP_TGT_FAIL, OMP_TGT_SUCCESS};
use omptarget_openmp::{Ident, KernelLaunch, Loc, MapArgs, TargetRegion};
use std::ffi::c_void;

/// Decode and launch; the common body of all variants. Returns
/// `OMP_TGT_SUCCESS`, or `OMP_TGT_FAIL` when the region must run on the host.
/// `nowait`: a `_nowait` variant (a flag, not a search of `entry`: this
/// runs on every launch).
///
/// # Safety
/// `loc` is null or a valid `ident_t`; `host_ptr` is the region's host entry
/// address; each non-null array holds `arg_num` elements (`base` writable)
/// and stays valid for the call, and the pointers in them name host memory
/// as the map types say (all of which clang's generated call guarantees).
#[allow(clippy::too_many_arguments)]
unsafe fn run(
    entry: &'static str,
    nowait: bool,
    loc: *mut c_void,
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
    teams: Option<Teams>,
) -> i32 {
    guard(entry, OMP_TGT_FAIL, || {
        // SAFETY: our caller's contract: each non-null array holds `arg_num`
        // elements, `base` writable, valid for this call, which outlives the
        // view `args` (dropped at the end of this closure); the pointers in
        // them name host memory as the map types say.
        match unsafe { MapArgs::from_raw(arg_num, base, begin, sizes, types, names, mappers) } {
            Some(args) => {
                let (num_teams, thread_limit) =
                    teams.map_or((0, 0), |t| (t.num_teams, t.thread_limit));
                let launch = KernelLaunch::legacy(num_teams, thread_limit, teams.is_some());
                // SAFETY: our caller's contract: `loc` is null or a valid
                // `ident_t` for this call.
                let loc = unsafe { Loc::from_raw(loc as *const Ident) };
                // SAFETY: our caller's contract: `host_ptr` is the region's
                // host entry, whose kernel takes what `args` describes.
                let region = unsafe { TargetRegion::new(host_ptr, &args, &launch) };
                with_session_deferred(
                    nowait,
                    || OMP_TGT_SUCCESS,
                    |s| s.target_kernel(loc, device_id, region),
                )
            }
            None => {
                eprintln!(
                    "Libomptarget error: {entry}: null argument array with {arg_num} arguments"
                );
                OMP_TGT_FAIL
            }
        }
    })
}

/// `Some(Teams)` for the teams variants (which take `num_teams` and
/// `thread_limit` after the map arrays), `None` for the others.
macro_rules! teams {
    () => {
        None
    };
    ($num_teams:ident, $thread_limit:ident) => {
        Some(Teams {
            num_teams: $num_teams,
            thread_limit: $thread_limit,
        })
    };
}

/// The four variants of one launch entry: plain, `_nowait` (the compiler's
/// task already resolved its `depend` clauses, so it runs synchronously as
/// in LLVM 14), `_mapper` (source location, names, user mappers) and
/// `_nowait_mapper`. The teams entries add `num_teams` and `thread_limit`.
macro_rules! target_entries {
    ($plain:ident, $nowait:ident, $mapper:ident, $nowait_mapper:ident $(, teams($nt:ident, $tl:ident))?) => {
        /// The plain variant: no source location, names or mappers.
        ///
        /// # Safety
        /// As `run`'s: `host_ptr` the region's host entry, each non-null
        /// array holding `arg_num` elements (as clang's call guarantees).
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $plain(
            device_id: i64,
            host_ptr: *mut c_void,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            $($nt: i32, $tl: i32,)?
        ) -> i32 {
            let (loc, none) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: `host_ptr` and the map arrays are this entry's
            // caller's, under `run`'s contract; `loc`, `names` and `mappers`
            // are null, which `run` allows.
            unsafe { run(stringify!($plain), false, loc, device_id, host_ptr, arg_num, base, begin, sizes, types, none, none, teams!($($nt, $tl)?)) }
        }

        /// The `_nowait` variant, run synchronously.
        ///
        /// # Safety
        /// As the plain variant's; the dependence lists are not read.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $nowait(
            device_id: i64,
            host_ptr: *mut c_void,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            $($nt: i32, $tl: i32,)?
            _dep_num: i32,
            _dep_list: *mut c_void,
            _noalias_dep_num: i32,
            _noalias_dep_list: *mut c_void,
        ) -> i32 {
            let (loc, none) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: as in the plain variant: the caller's arrays under
            // `run`'s contract, null `loc`, `names` and `mappers`.
            unsafe { run(stringify!($nowait), true, loc, device_id, host_ptr, arg_num, base, begin, sizes, types, none, none, teams!($($nt, $tl)?)) }
        }

        /// The `_mapper` variant: source location, names and user mappers.
        ///
        /// # Safety
        /// As `run`'s: `loc` null or a valid `ident_t`, `host_ptr` the
        /// region's host entry, each non-null array holding `arg_num` elements.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $mapper(
            loc: *mut c_void,
            device_id: i64,
            host_ptr: *mut c_void,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            names: *mut *mut c_void,
            mappers: *mut *mut c_void,
            $($nt: i32, $tl: i32,)?
        ) -> i32 {
            // SAFETY: every pointer is this entry's caller's, under the
            // `# Safety` contract `run` needs.
            unsafe { run(stringify!($mapper), false, loc, device_id, host_ptr, arg_num, base, begin, sizes, types, names, mappers, teams!($($nt, $tl)?)) }
        }

        /// The `_nowait_mapper` variant, run synchronously.
        ///
        /// # Safety
        /// As the `_mapper` variant's; the dependence lists are not read.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $nowait_mapper(
            loc: *mut c_void,
            device_id: i64,
            host_ptr: *mut c_void,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            names: *mut *mut c_void,
            mappers: *mut *mut c_void,
            $($nt: i32, $tl: i32,)?
            _dep_num: i32,
            _dep_list: *mut c_void,
            _noalias_dep_num: i32,
            _noalias_dep_list: *mut c_void,
        ) -> i32 {
            // SAFETY: every pointer is this entry's caller's, under the
            // `# Safety` contract `run` needs.
            unsafe { run(stringify!($nowait_mapper), true, loc, device_id, host_ptr, arg_num, base, begin, sizes, types, names, mappers, teams!($($nt, $tl)?)) }
        }

        export_c!($plain, $nowait, $mapper, $nowait_mapper);
    };
}

target_entries!(
    __tgt_target,
    __tgt_target_nowait,
    __tgt_target_mapper,
    __tgt_target_nowait_mapper
);
target_entries!(
    __tgt_target_teams,
    __tgt_target_teams_nowait,
    __tgt_target_teams_mapper,
    __tgt_target_teams_nowait_mapper,
    teams(num_teams, thread_limit)
);

/// Record the trip count of the next teams loop launched by this thread.
extern "C-unwind" fn __kmpc_push_target_tripcount(device_id: i64, loop_tripcount: u64) {
    // SAFETY: the only contract is on `loc`, and null is allowed.
    unsafe { __kmpc_push_target_tripcount_mapper(std::ptr::null_mut(), device_id, loop_tripcount) }
}

/// Record the trip count of the next teams loop, with a source location.
///
/// # Safety
/// `loc` is null or a valid `ident_t`.
unsafe extern "C-unwind" fn __kmpc_push_target_tripcount_mapper(
    loc: *mut c_void,
    device_id: i64,
    loop_tripcount: u64,
) {
    guard("__kmpc_push_target_tripcount_mapper", (), || {
        // SAFETY: `loc` is null or a valid `ident_t` (our caller's contract).
        let loc = unsafe { Loc::from_raw(loc as *const Ident) };
        with_session(|s| s.push_tripcount(loc, device_id, loop_tripcount));
    })
}

export_c!(
    __kmpc_push_target_tripcount,
    __kmpc_push_target_tripcount_mapper
);
