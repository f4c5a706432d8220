//! `__tgt_target_data_{begin,end,update}` in all `_mapper` / `_nowait`
//! variants. LLVM 14 runs the `_nowait` variants synchronously (the compiler
//! wraps them in a task that carries the `depend` clauses), and so do we.

use crate::boundary::guard;
use crate::export::export_c;
use crate::session::lifecycle::with_session_deferred;
use crate::session::DataOp;
use omptarget_openmp::{Ident, Loc, MapArgs};
use std::ffi::c_void;

/// Decode and run one data operation; the common body of all variants.
///
/// # Safety
/// `loc` is null or a valid `ident_t`; each non-null array holds `arg_num`
/// elements (`base` writable) and stays valid for the call, and the
/// pointers in them name host memory as the map types say (all of which
/// clang's generated call guarantees).
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
    // The entry's own name says whether it is a `_nowait` one.
    let nowait = entry.contains("nowait");
    guard(entry, (), || {
        // SAFETY: our caller's contract: each non-null array holds `arg_num`
        // elements, `base` writable, valid for this call, which outlives the
        // view `args` (dropped at the end of this closure); the pointers in
        // them name host memory as the map types say.
        match unsafe { MapArgs::from_raw(arg_num, base, begin, sizes, types, names, mappers) } {
            Some(args) => {
                // SAFETY: our caller's contract: `loc` is null or a valid
                // `ident_t` for this call.
                let loc = unsafe { Loc::from_raw(loc as *const Ident) };
                with_session_deferred(
                    entry.contains("_nowait"),
                    || (),
                    |s| s.target_data(op, nowait, loc, device_id, &args),
                );
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
        ///
        /// # Safety
        /// As `run`'s (the arrays hold `arg_num` elements, as clang's call
        /// guarantees).
        unsafe extern "C-unwind" fn $plain(
            device_id: i64,
            arg_num: i32,
            base: *mut *mut c_void,
            begin: *mut *mut c_void,
            sizes: *mut i64,
            types: *mut i64,
        ) {
            // SAFETY: the map arrays are this entry's caller's (its `# Safety`
            // contract is `run`'s); `loc`, `names` and `mappers` are null,
            // which `run` allows.
            unsafe {
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
        }

        /// The `_nowait` variant; dependences were resolved by the caller's task.
        ///
        /// # Safety
        /// As the plain variant's; the dependence lists are not read.
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
            // SAFETY: the map arrays are this entry's caller's (its `# Safety`
            // contract is `run`'s); `loc`, `names` and `mappers` are null,
            // which `run` allows.
            unsafe {
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
        }

        /// The `_mapper` variant: source location, names and user mappers.
        ///
        /// # Safety
        /// As `run`'s: `loc` null or a valid `ident_t`, each non-null array
        /// holding `arg_num` elements.
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
            // SAFETY: `loc`, the map arrays, `names` and `mappers` are this
            // entry's caller's, under the `# Safety` contract `run` needs.
            unsafe {
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
        }

        /// The `_nowait_mapper` variant.
        ///
        /// # Safety
        /// As the `_mapper` variant's; the dependence lists are not read.
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
            // SAFETY: `loc`, the map arrays, `names` and `mappers` are this
            // entry's caller's, under the `# Safety` contract `run` needs.
            unsafe {
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
