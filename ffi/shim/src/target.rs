//! `__tgt_target` / `__tgt_target_teams` in all variants, and the loop trip
//! count the compiler pushes before a teams launch.

use crate::boundary::guard;
use crate::export::export_c;
use crate::lifecycle::with_session;
use crate::session::Teams;
use omptarget::offload::MapArgs;
use omptarget_abi::OMP_TGT_FAIL;
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

unsafe extern "C" fn __tgt_target(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
) -> i32 {
    run(
        "__tgt_target",
        std::ptr::null_mut(),
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        None,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_nowait(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    run(
        "__tgt_target_nowait",
        std::ptr::null_mut(),
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        None,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_mapper(
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
) -> i32 {
    run(
        "__tgt_target_mapper",
        loc,
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        names,
        mappers,
        None,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_nowait_mapper(
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
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    run(
        "__tgt_target_nowait_mapper",
        loc,
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        names,
        mappers,
        None,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_teams(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    num_teams: i32,
    thread_limit: i32,
) -> i32 {
    let teams = Some(Teams {
        num_teams,
        thread_limit,
    });
    run(
        "__tgt_target_teams",
        std::ptr::null_mut(),
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        teams,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_teams_nowait(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    num_teams: i32,
    thread_limit: i32,
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    let teams = Some(Teams {
        num_teams,
        thread_limit,
    });
    run(
        "__tgt_target_teams_nowait",
        std::ptr::null_mut(),
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        teams,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_teams_mapper(
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
    num_teams: i32,
    thread_limit: i32,
) -> i32 {
    let teams = Some(Teams {
        num_teams,
        thread_limit,
    });
    run(
        "__tgt_target_teams_mapper",
        loc,
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        names,
        mappers,
        teams,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn __tgt_target_teams_nowait_mapper(
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
    num_teams: i32,
    thread_limit: i32,
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    let teams = Some(Teams {
        num_teams,
        thread_limit,
    });
    run(
        "__tgt_target_teams_nowait_mapper",
        loc,
        device_id,
        host_ptr,
        arg_num,
        base,
        begin,
        sizes,
        types,
        names,
        mappers,
        teams,
    )
}

/// Record the trip count of the next teams loop launched by this thread.
extern "C" fn __kmpc_push_target_tripcount(device_id: i64, loop_tripcount: u64) {
    // Safety: a null location.
    unsafe { __kmpc_push_target_tripcount_mapper(std::ptr::null_mut(), device_id, loop_tripcount) }
}

/// # Safety
/// `loc` is null or a valid `ident_t`.
unsafe extern "C" fn __kmpc_push_target_tripcount_mapper(
    loc: *mut c_void,
    device_id: i64,
    loop_tripcount: u64,
) {
    guard("__kmpc_push_target_tripcount_mapper", (), || {
        with_session(|s| s.push_tripcount(loc, device_id, loop_tripcount));
    })
}

export_c!(
    __tgt_target,
    __tgt_target_nowait,
    __tgt_target_mapper,
    __tgt_target_nowait_mapper,
    __tgt_target_teams,
    __tgt_target_teams_nowait,
    __tgt_target_teams_mapper,
    __tgt_target_teams_nowait_mapper,
    __kmpc_push_target_tripcount,
    __kmpc_push_target_tripcount_mapper,
);
