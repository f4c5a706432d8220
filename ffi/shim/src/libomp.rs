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
        // SAFETY: `self.name` is a NUL-terminated `&'static CStr`, and
        // `RTLD_DEFAULT` is a pseudo-handle dlsym always accepts; dlsym only
        // reads the loader's tables.
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
    // SAFETY: `f` is the non-null address dlsym found for
    // `omp_get_default_device`, whose C signature (OpenMP API) is
    // `int omp_get_default_device(void)`: the type transmuted to; it has no
    // precondition.
    unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(f)() }
}

/// `__kmpc_omp_wait_deps`: wait for the dependences of the current task.
///
/// # Safety
/// `loc` is null or a valid `ident_t`; `gtid` is the calling thread's
/// OpenMP id; a non-null `dep_list` holds `ndeps` `kmp_depend_info_t`
/// records (what clang passes to the `__tgt_interop_*` entries).
pub(crate) unsafe fn wait_deps(loc: *mut c_void, gtid: i32, ndeps: i32, dep_list: *mut c_void) {
    if ndeps <= 0 || dep_list.is_null() {
        return;
    }
    let f = WAIT_DEPS.get();
    if f.is_null() {
        return;
    }
    type WaitDeps = extern "C" fn(*mut c_void, i32, i32, *mut c_void, i32, *mut c_void);
    // SAFETY: `f` is the non-null address dlsym found for libomp's `void
    // __kmpc_omp_wait_deps(ident_t*, kmp_int32, kmp_int32,
    // kmp_depend_info_t*, kmp_int32, kmp_depend_info_t*)`, the type
    // transmuted to; `loc`, `gtid` and `ndeps` records at `dep_list` are
    // valid (our caller's contract), and the noalias list is empty (0, null).
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
    // SAFETY: `f` is the non-null address dlsym found for libomp's `int
    // __kmpc_get_target_offload(void)`, the type transmuted to; it has no
    // precondition.
    Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(f)() })
}

/// `__kmpc_global_thread_num(NULL)`: the OpenMP thread id of the caller
/// (keys per-thread state such as the pushed trip count), or 0.
pub(crate) fn global_thread_num() -> i32 {
    let f = GLOBAL_THREAD_NUM.get();
    if f.is_null() {
        return 0;
    }
    // SAFETY: `f` is the non-null address dlsym found for libomp's
    // `kmp_int32 __kmpc_global_thread_num(ident_t *)`, the type transmuted
    // to; libomp accepts a null `ident_t` there.
    unsafe {
        std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> c_int>(f)(null_mut())
    }
}
