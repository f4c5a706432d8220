//! OpenMP 5.1 interop objects (`omp_get_interop_*`, `__tgt_interop_*`),
//! answering as LLVM 14 does on the host: an interop object exists only for
//! a device whose plugin exports `__tgt_rtl_init_device_info` (and, for
//! `targetsync`, `__tgt_rtl_init_async_info`); otherwise `init` yields
//! `omp_interop_none` (null). Where LLVM 14 dereferences a null object
//! (asking `omp_interop_none` for `targetsync`), we return an error code.

use crate::boundary::guard;
use crate::export::export_c;
use crate::libomp;
use crate::session::lifecycle::with_session;
use omptarget_abi::{AsyncInfo, DeviceInfo};
use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;

// omp_interop_property_t
const IPR_FR_ID: c_int = -1;
const IPR_VENDOR: c_int = -3;
const IPR_VENDOR_NAME: c_int = -4;
const IPR_DEVICE_NUM: c_int = -5;
const IPR_DEVICE: c_int = -7;
const IPR_DEVICE_CONTEXT: c_int = -8;
const IPR_TARGETSYNC: c_int = -9;
const IPR_FIRST: c_int = -9;
// omp_interop_rc_t
const IRC_NO_VALUE: c_int = 1;
const IRC_SUCCESS: c_int = 0;
const IRC_EMPTY: c_int = -1;
const IRC_OUT_OF_RANGE: c_int = -2;
const IRC_OTHER: c_int = -6;
// kmp_interop_type_t
const INTEROP_TYPE_TASKSYNC: i32 = 2;
// omp_foreign_runtime_ids_t::cuda and omp_interop_backend_type_cuda_1
const VENDOR_CUDA: i32 = 1;
const BACKEND_CUDA_1: isize = 1;

/// `omp_interop_val_t`, laid out as LLVM 14's so that a debugger or a
/// program peeking inside sees the same fields.
#[repr(C)]
pub(crate) struct InteropVal {
    err_str: *const c_char,
    async_info: *mut AsyncInfo,
    device_info: DeviceInfo,
    interop_type: i32,
    device_id: isize,
    vendor_id: i32,
    backend_type_id: isize,
}

/// The property check LLVM 14 makes before answering, without its null
/// dereference.
fn check(
    interop: *const InteropVal,
    property: c_int,
    err: *mut c_int,
) -> Option<&'static InteropVal> {
    let set = |code: c_int| {
        if !err.is_null() {
            // SAFETY: `err` is the `int *err` of an `omp_get_interop_*`
            // call: by the OpenMP API null or the caller's writable `int`,
            // and it is not null here.
            unsafe { *err = code };
        }
    };
    set(IRC_SUCCESS);
    if !(IPR_FIRST..0).contains(&property) {
        set(IRC_OUT_OF_RANGE);
        return None;
    }
    // SAFETY: by the OpenMP API, `interop` is `omp_interop_none` (null) or
    // an object `__tgt_interop_init` made with `Box::into_raw` and
    // `__tgt_interop_destroy` has not freed yet; `as_ref` maps null to None.
    // Nothing mutates the object while an `omp_get_interop_*` call reads it.
    let Some(val) = (unsafe { interop.as_ref() }) else {
        set(IRC_EMPTY);
        return None;
    };
    let tasksync = val.interop_type == INTEROP_TYPE_TASKSYNC;
    if (property == IPR_TARGETSYNC && !tasksync)
        || ((property == IPR_DEVICE || property == IPR_DEVICE_CONTEXT) && tasksync)
    {
        set(IRC_OTHER);
        return None;
    }
    Some(val)
}

extern "C-unwind" fn omp_get_interop_int(
    interop: *const InteropVal,
    property: c_int,
    err: *mut c_int,
) -> isize {
    guard("omp_get_interop_int", 0, || {
        match check(interop, property, err) {
            Some(val) => match property {
                IPR_FR_ID => val.backend_type_id,
                IPR_VENDOR => val.vendor_id as isize,
                IPR_DEVICE_NUM => val.device_id,
                _ => type_mismatch(err, 0),
            },
            None => 0,
        }
    })
}

extern "C-unwind" fn omp_get_interop_ptr(
    interop: *const InteropVal,
    property: c_int,
    err: *mut c_int,
) -> *mut c_void {
    guard("omp_get_interop_ptr", null_mut(), || {
        match check(interop, property, err) {
            Some(val) => match property {
                IPR_DEVICE if !val.device_info.device.is_null() => val.device_info.device,
                IPR_DEVICE => {
                    set_err(err, IRC_NO_VALUE);
                    val.err_str as *mut c_void
                }
                IPR_DEVICE_CONTEXT => val.device_info.context,
                IPR_TARGETSYNC => {
                    // SAFETY: `async_info` is null or the `__tgt_async_info`
                    // the plugin's `init_async_info` allocated for this
                    // object at init; the interop ABI gives the plugin no
                    // call that frees it, so it outlives the object.
                    // `as_ref` maps null to None.
                    unsafe { val.async_info.as_ref() }.map_or(null_mut(), |a| a.queue)
                }
                _ => type_mismatch(err, null_mut()),
            },
            None => null_mut(),
        }
    })
}

extern "C-unwind" fn omp_get_interop_str(
    interop: *const InteropVal,
    property: c_int,
    err: *mut c_int,
) -> *const c_char {
    guard("omp_get_interop_str", std::ptr::null(), || {
        match check(interop, property, err) {
            Some(val) => match property {
                IPR_FR_ID if val.interop_type == INTEROP_TYPE_TASKSYNC => c"tasksync".as_ptr(),
                IPR_FR_ID => c"device+context".as_ptr(),
                IPR_VENDOR_NAME => c"cuda".as_ptr(),
                _ => type_mismatch(err, std::ptr::null()),
            },
            None => std::ptr::null(),
        }
    })
}

/// LLVM 14 answers null for names and descriptions after its checks.
extern "C-unwind" fn omp_get_interop_name(
    interop: *const InteropVal,
    property: c_int,
) -> *const c_char {
    guard("omp_get_interop_name", std::ptr::null(), || {
        let mut err = 0;
        let _ = check(interop, property, &mut err);
        std::ptr::null()
    })
}

extern "C-unwind" fn omp_get_interop_type_desc(
    interop: *const InteropVal,
    property: c_int,
) -> *const c_char {
    omp_get_interop_name(interop, property)
}

fn set_err(err: *mut c_int, code: c_int) {
    if !err.is_null() {
        // SAFETY: `err` is the `int *err` of an `omp_get_interop_*` call: by
        // the OpenMP API null or the caller's writable `int`, and it is not
        // null here.
        unsafe { *err = code };
    }
}

/// LLVM's getTypeMismatch: the property exists but has another type.
fn type_mismatch<T>(err: *mut c_int, value: T) -> T {
    set_err(err, IRC_OTHER);
    value
}

/// # Safety
/// `interop_ptr` is null or points to the user's writable `omp_interop_t`
/// variable; `loc` is null or a valid `ident_t`; `dep_list` is null or
/// holds `ndeps` libomp dependence records.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn __tgt_interop_init(
    loc: *mut c_void,
    gtid: i32,
    interop_ptr: *mut *mut InteropVal,
    interop_type: i32,
    device_id: i32,
    ndeps: i64,
    dep_list: *mut c_void,
    _have_nowait: i32,
) {
    guard("__tgt_interop_init", (), || {
        if interop_ptr.is_null() {
            eprintln!("Libomptarget error: __tgt_interop_init called with a null interop pointer");
            return;
        }
        let device_id = if device_id == -1 {
            libomp::default_device()
        } else {
            device_id
        };
        if interop_type == INTEROP_TYPE_TASKSYNC {
            // SAFETY: `loc`, `gtid` and the `ndeps` records at `dep_list` are
            // what clang passed this entry (our caller's contract).
            unsafe { libomp::wait_deps(loc, gtid, ndeps as i32, dep_list) };
        }
        let mut val = Box::new(InteropVal {
            err_str: std::ptr::null(),
            async_info: null_mut(),
            device_info: DeviceInfo {
                context: null_mut(),
                device: null_mut(),
            },
            interop_type,
            device_id: device_id as isize,
            vendor_id: VENDOR_CUDA,
            backend_type_id: BACKEND_CUDA_1,
        });
        let ready = with_session(|s| {
            s.interop_device_info(
                device_id,
                &mut val.device_info,
                &mut val.err_str,
                interop_type == INTEROP_TYPE_TASKSYNC,
                &mut val.async_info,
            )
        });
        let new = match ready {
            crate::session::InteropInit::NotReady => {
                val.err_str = c"Device not ready!".as_ptr();
                Box::into_raw(val)
            }
            crate::session::InteropInit::Ready => Box::into_raw(val),
            crate::session::InteropInit::Unsupported => null_mut(),
        };
        // SAFETY: `interop_ptr` is non-null (checked above) and points to the
        // user's writable `omp_interop_t` variable (our caller's contract).
        unsafe { *interop_ptr = new };
    })
}

/// # Safety
/// As for `__tgt_interop_init`; `*interop_ptr` came from it.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn __tgt_interop_use(
    loc: *mut c_void,
    gtid: i32,
    interop_ptr: *mut *mut InteropVal,
    _device_id: i32,
    ndeps: i32,
    dep_list: *mut c_void,
    _have_nowait: i32,
) {
    guard("__tgt_interop_use", (), || {
        // SAFETY: `interop_ptr` is null or the user's `omp_interop_t`
        // variable, and a non-null value in it is an object of
        // `__tgt_interop_init` not yet destroyed (our caller's contract);
        // `as_ref` maps null to None at both levels.
        let Some(val) = (unsafe { interop_ptr.as_ref().and_then(|p| p.as_ref()) }) else {
            eprintln!("Libomptarget error: __tgt_interop_use called without an interop object");
            return;
        };
        if val.interop_type == INTEROP_TYPE_TASKSYNC {
            // SAFETY: `loc`, `gtid` and the `ndeps` records at `dep_list` are
            // what clang passed this entry (our caller's contract).
            unsafe { libomp::wait_deps(loc, gtid, ndeps, dep_list) };
        }
    })
}

/// # Safety
/// As for `__tgt_interop_use`. Ownership: the object is freed and the
/// variable set to `omp_interop_none`.
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn __tgt_interop_destroy(
    loc: *mut c_void,
    gtid: i32,
    interop_ptr: *mut *mut InteropVal,
    _device_id: i32,
    ndeps: i32,
    dep_list: *mut c_void,
    _have_nowait: i32,
) {
    guard("__tgt_interop_destroy", (), || {
        if interop_ptr.is_null() {
            return;
        }
        // SAFETY: `interop_ptr` is non-null and points to the user's
        // `omp_interop_t` variable (our caller's contract): readable.
        let raw = unsafe { *interop_ptr };
        if raw.is_null() {
            return;
        }
        // SAFETY: a non-null value in the variable is an object that
        // `__tgt_interop_init` made with `Box::into_raw` and nobody freed yet
        // (our caller's contract); the variable is cleared below, so this is
        // its only `from_raw`.
        let val = unsafe { Box::from_raw(raw) };
        if val.interop_type == INTEROP_TYPE_TASKSYNC {
            // SAFETY: `loc`, `gtid` and the `ndeps` records at `dep_list` are
            // what clang passed this entry (our caller's contract).
            unsafe { libomp::wait_deps(loc, gtid, ndeps, dep_list) };
        }
        // SAFETY: the same user variable, writable (our caller's contract).
        unsafe { *interop_ptr = null_mut() };
        drop(val);
    })
}

export_c!(
    omp_get_interop_int,
    omp_get_interop_ptr,
    omp_get_interop_str,
    omp_get_interop_name,
    omp_get_interop_type_desc,
    __tgt_interop_init,
    __tgt_interop_use,
    __tgt_interop_destroy,
);
