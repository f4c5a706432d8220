//! `__tgt_target_data_{begin,end,update}` in all `_mapper` / `_nowait`
//! variants. LLVM 14 runs the `_nowait` variants synchronously (the compiler
//! wraps them in a task that carries the `depend` clauses), and so do we.

use crate::boundary::guard;
use crate::export::export_c;
use crate::lifecycle::with_session;
use crate::session::DataOp;
use omptarget_openmp::MapArgs;
use std::ffi::c_void;

/// Decode and run one data operation; the common body of all variants.
///
/// # Safety
/// The arrays hold `arg_num` elements, as clang guarantees.
#[allow(clippy::too_many_arguments)]
unsafe fn run(
    entry: &'static str,
    op: DataOp,
    loc: *mut c_void,
    device_id: i64,
    arg_num: i32,
    base: *mut *mut c_void,
    begin: *mut *mut c_void,
    sizes: *mut i64,
    types: *mut i64,
    names: *mut *mut c_void,
    mappers: *mut *mut c_void,
) {
    guard(entry, (), || {
        match MapArgs::from_raw(arg_num, base, begin, sizes, types, names, mappers) {
            Some(args) => {
                with_session(|s| s.target_data(op, loc, device_id, &args));
            }
            None => eprintln!(
                "Libomptarget error: {entry}: null argument array with {arg_num} arguments"
            ),
        }
    })
}

macro_rules! data_entries {
    ($op:expr, $plain:ident, $nowait:ident, $mapper:ident, $nowait_mapper:ident) => {
        /// LLVM 14 `__tgt_target_data_*`: no source location, no mappers.
        unsafe extern "C-unwind" fn $plain(
            device_id: i64,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
        ) {
            run(
                stringify!($plain),
                $op,
                std::ptr::null_mut(),
                device_id,
                arg_num,
                base,
                begin,
                sizes,
                types,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }

        /// The `_nowait` variant; dependences were resolved by the caller's task.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $nowait(
            device_id: i64,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            _dep_num: i32,
            _dep_list: *mut c_void,
            _noalias_dep_num: i32,
            _noalias_dep_list: *mut c_void,
        ) {
            run(
                stringify!($nowait),
                $op,
                std::ptr::null_mut(),
                device_id,
                arg_num,
                base,
                begin,
                sizes,
                types,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }

        /// The `_mapper` variant: source location, names and user mappers.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $mapper(
            loc: *mut c_void,
            device_id: i64,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
            names: *mut *mut c_void,
            mappers: *mut *mut c_void,
        ) {
            run(
                stringify!($mapper),
                $op,
                loc,
                device_id,
                arg_num,
                base,
                begin,
                sizes,
                types,
                names,
                mappers,
            )
        }

        /// The `_nowait_mapper` variant.
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C-unwind" fn $nowait_mapper(
            loc: *mut c_void,
            device_id: i64,
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
        ) {
            run(
                stringify!($nowait_mapper),
                $op,
                loc,
                device_id,
                arg_num,
                base,
                begin,
                sizes,
                types,
                names,
                mappers,
            )
        }

        export_c!($plain, $nowait, $mapper, $nowait_mapper);
    };
}

data_entries!(
    DataOp::Begin,
    __tgt_target_data_begin,
    __tgt_target_data_begin_nowait,
    __tgt_target_data_begin_mapper,
    __tgt_target_data_begin_nowait_mapper
);
data_entries!(
    DataOp::End,
    __tgt_target_data_end,
    __tgt_target_data_end_nowait,
    __tgt_target_data_end_mapper,
    __tgt_target_data_end_nowait_mapper
);
data_entries!(
    DataOp::Update,
    __tgt_target_data_update,
    __tgt_target_data_update_nowait,
    __tgt_target_data_update_mapper,
    __tgt_target_data_update_nowait_mapper
);
