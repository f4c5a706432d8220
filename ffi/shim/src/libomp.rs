//! The few libomp functions LLVM's libomptarget imports weakly, looked up
//! in the process at run time (the program links libomp; a Rust program
//! using the shim directly may not).
//!
//! Each lookup is made once and cached: `dlsym` takes the dynamic loader's
//! lock, which must stay off the launch path, and which must not be taken
//! while holding the shim's lifecycle lock (a library constructor holds the
//! loader's lock while it registers). Each is first looked up by the first
//! call that needs it.

use std::ffi::{c_int, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering::Acquire, Ordering::Release};

/// A libomp function found by name, cached after the first successful
/// lookup (absent functions are looked up again: libomp may come later).
struct Symbol {
    name: &'static CStr,
    cached: AtomicPtr<c_void>,
}

impl Symbol {
    const fn new(name: &'static CStr) -> Self {
        Symbol {
            name,
            cached: AtomicPtr::new(null_mut()),
        }
    }

    fn get(&self) -> *mut c_void {
        let cached = self.cached.load(Acquire);
        if !cached.is_null() {
            return cached;
        }
        // Safety: dlsym with RTLD_DEFAULT and a NUL-terminated name.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, self.name.as_ptr()) };
        if !found.is_null() {
            self.cached.store(found, Release);
        }
        found
    }
}

static DEFAULT_DEVICE: Symbol = Symbol::new(c"omp_get_default_device");
static WAIT_DEPS: Symbol = Symbol::new(c"__kmpc_omp_wait_deps");
static TARGET_OFFLOAD: Symbol = Symbol::new(c"__kmpc_get_target_offload");
static GLOBAL_THREAD_NUM: Symbol = Symbol::new(c"__kmpc_global_thread_num");

/// `omp_get_default_device()`, or 0 without libomp.
pub(crate) fn default_device() -> i32 {
    let f = DEFAULT_DEVICE.get();
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
    let f = WAIT_DEPS.get();
    if f.is_null() {
        return;
    }
    type WaitDeps = extern "C" fn(*mut c_void, i32, i32, *mut c_void, i32, *mut c_void);
    // Safety: libomp's `void __kmpc_omp_wait_deps(ident_t*, kmp_int32,
    // kmp_int32, kmp_depend_info_t*, kmp_int32, kmp_depend_info_t*)`.
    unsafe {
        std::mem::transmute::<*mut c_void, WaitDeps>(f)(loc, gtid, ndeps, dep_list, 0, null_mut())
    }
}

/// `__kmpc_get_target_offload()`: libomp's parse of OMP_TARGET_OFFLOAD
/// (0 disabled, 1 default, 2 mandatory), or `None` without libomp.
pub(crate) fn target_offload() -> Option<i32> {
    let f = TARGET_OFFLOAD.get();
    if f.is_null() {
        return None;
    }
    // Safety: libomp's `int __kmpc_get_target_offload(void)`.
    Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(f)() })
}

/// `__kmpc_global_thread_num(NULL)`: the OpenMP thread id of the caller
/// (keys per-thread state such as the pushed trip count), or 0.
pub(crate) fn global_thread_num() -> i32 {
    let f = GLOBAL_THREAD_NUM.get();
    if f.is_null() {
        return 0;
    }
    // Safety: libomp's `kmp_int32 __kmpc_global_thread_num(ident_t *)`.
    unsafe {
        std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> c_int>(f)(null_mut())
    }
}
