//! `__tgt_target` / `__tgt_target_teams` in all variants, and the loop trip
//! count the compiler pushes before a teams launch.

use crate::boundary::guard;
use crate::export::export_c;
use crate::lifecycle::with_session;
use crate::session::Teams;
use omptarget_abi::OMP_TGT_FAIL;
use omptarget_openmp::MapArgs;
use std::ffi::c_void;

/// Decode and launch; the common body of all variants. Returns
/// `OMP_TGT_SUCCESS`, or `OMP_TGT_FAIL` when the region must run on the host.
///
/// # Safety
/// The arrays hold `arg_num` elements, as clang guarantees.
#[allow(clippy::too_many_arguments)]
unsafe fn run(
    entry: &'static str,
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
        match MapArgs::from_raw(arg_num, base, begin, sizes, types, names, mappers) {
            Some(args) => with_session(|s| s.target(loc, device_id, host_ptr, &args, teams)),
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
            run(stringify!($plain), loc, device_id, host_ptr, arg_num, base, begin, sizes, types, none, none, teams!($($nt, $tl)?))
        }

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
            run(stringify!($nowait), loc, device_id, host_ptr, arg_num, base, begin, sizes, types, none, none, teams!($($nt, $tl)?))
        }

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
            run(stringify!($mapper), loc, device_id, host_ptr, arg_num, base, begin, sizes, types, names, mappers, teams!($($nt, $tl)?))
        }

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
            run(stringify!($nowait_mapper), loc, device_id, host_ptr, arg_num, base, begin, sizes, types, names, mappers, teams!($($nt, $tl)?))
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
    // Safety: a null location.
    unsafe { __kmpc_push_target_tripcount_mapper(std::ptr::null_mut(), device_id, loop_tripcount) }
}

/// # Safety
/// `loc` is null or a valid `ident_t`.
unsafe extern "C-unwind" fn __kmpc_push_target_tripcount_mapper(
    loc: *mut c_void,
    device_id: i64,
    loop_tripcount: u64,
) {
    guard("__kmpc_push_target_tripcount_mapper", (), || {
        with_session(|s| s.push_tripcount(loc, device_id, loop_tripcount));
    })
}

export_c!(
    __kmpc_push_target_tripcount,
    __kmpc_push_target_tripcount_mapper
);
