//! The few libomp functions LLVM's libomptarget imports weakly, looked up
//! at run time in the process (the program links libomp; a Rust program
//! using the shim directly may not).

use std::ffi::{c_int, c_void, CStr};

fn lookup(name: &CStr) -> *mut c_void {
    // Safety: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// `omp_get_default_device()`, or 0 without libomp.
pub(crate) fn default_device() -> i32 {
    let f = lookup(c"omp_get_default_device");
    if f.is_null() {
        return 0;
    }
    // Safety: libomp's `int omp_get_default_device(void)`.
    unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(f)() }
}

/// `__kmpc_omp_wait_deps`: wait for the dependences of the current task.
pub(crate) fn wait_deps(loc: *mut c_void, gtid: i32, ndeps: i32, dep_list: *mut c_void) {
    if ndeps <= 0 || dep_list.is_null() {
        return;
    }
    let f = lookup(c"__kmpc_omp_wait_deps");
    if f.is_null() {
        return;
    }
    type WaitDeps = extern "C" fn(*mut c_void, i32, i32, *mut c_void, i32, *mut c_void);
    // Safety: libomp's `void __kmpc_omp_wait_deps(ident_t*, kmp_int32,
    // kmp_int32, kmp_depend_info_t*, kmp_int32, kmp_depend_info_t*)`.
    unsafe {
        std::mem::transmute::<*mut c_void, WaitDeps>(f)(
            loc,
            gtid,
            ndeps,
            dep_list,
            0,
            std::ptr::null_mut(),
        )
    }
}

/// `__kmpc_get_target_offload()`: libomp's parse of OMP_TARGET_OFFLOAD
/// (0 disabled, 1 default, 2 mandatory), or `None` without libomp.
pub(crate) fn target_offload() -> Option<i32> {
    let f = lookup(c"__kmpc_get_target_offload");
    if f.is_null() {
        return None;
    }
    // Safety: libomp's `int __kmpc_get_target_offload(void)`.
    Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(f)() })
}

/// `__kmpc_global_thread_num(NULL)`: the OpenMP thread id of the caller
/// (keys per-thread state such as the pushed trip count), or 0.
pub(crate) fn global_thread_num() -> i32 {
    let f = lookup(c"__kmpc_global_thread_num");
    if f.is_null() {
        return 0;
    }
    // Safety: libomp's `kmp_int32 __kmpc_global_thread_num(ident_t *)`.
    unsafe {
        std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> c_int>(f)(
            std::ptr::null_mut(),
        )
    }
}
