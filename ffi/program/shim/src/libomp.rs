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
static TARGET_TASK_ALLOC: Symbol = Symbol::new(c"__kmpc_omp_target_task_alloc");
static TASK_WITH_DEPS: Symbol = Symbol::new(c"__kmpc_omp_task_with_deps");

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

/// libomp's `kmp_task_t` head: what a task routine gets (the rest of the
/// block is libomp's).
#[repr(C)]
pub(crate) struct KmpTask {
    /// The task's data; a helper task's is the runtime's heap block.
    pub(crate) shareds: *mut c_void,
    routine: Option<TaskRoutine>,
    part_id: i32,
    /// `data1` (`kmp_cmplrdata_t`: destructors or priority) and `data2`:
    /// part of libomp's `kmp_task_t`, whose whole size the allocation
    /// must cover: `__kmp_free_task` writes both (40 bytes in all).
    data1: *mut c_void,
    data2: *mut c_void,
}

/// `kmp_routine_entry_t`.
pub(crate) type TaskRoutine = extern "C" fn(i32, *mut KmpTask) -> i32;

/// `kmp_tasking_flags_t` with only `hidden_helper` (bit 7) set, as LLVM's
/// `libomp_helper_task_creation` builds it.
const HIDDEN_HELPER: i32 = 1 << 7;

/// What became of a helper task; the two refusals hand `shareds` back.
pub(crate) enum Spawned {
    /// Given to libomp, which returned this (0 once queued).
    Submitted(i32),
    /// libomp could not allocate the task.
    NotAllocated(*mut c_void),
    /// This process has no libomp tasking entries.
    NoTasking(*mut c_void),
}

/// Create a hidden-helper task running `routine` with `shareds`, after the
/// tasks `deps` name (`__kmpc_omp_target_task_alloc`, then
/// `__kmpc_omp_task_with_deps`, as LLVM's `libomp_helper_task_creation`).
/// Once `Submitted`, `routine` owns `shareds` (it runs exactly once).
pub(crate) fn spawn_helper_task(
    routine: TaskRoutine,
    shareds: *mut c_void,
    deps: &mut [DependInfo],
) -> Spawned {
    let (alloc, submit) = (TARGET_TASK_ALLOC.get(), TASK_WITH_DEPS.get());
    if alloc.is_null() || submit.is_null() {
        return Spawned::NoTasking(shareds);
    }
    let gtid = global_thread_num();
    type Alloc =
        extern "C" fn(*mut c_void, i32, i32, usize, usize, TaskRoutine, i64) -> *mut KmpTask;
    type Submit =
        extern "C" fn(*mut c_void, i32, *mut KmpTask, i32, *mut c_void, i32, *mut c_void) -> i32;
    // SAFETY: `alloc` is the non-null address dlsym found for libomp's
    // `kmp_task_t *__kmpc_omp_target_task_alloc(ident_t *, kmp_int32,
    // kmp_int32 flags, size_t sizeof_kmp_task_t, size_t sizeof_shareds,
    // kmp_routine_entry_t, kmp_int64 device_id)`, the type transmuted to;
    // a null `ident_t`, the caller's gtid, no shareds block (our own
    // pointer is stored below) and device -1 are what LLVM passes.
    let task = unsafe {
        std::mem::transmute::<*mut c_void, Alloc>(alloc)(
            null_mut(),
            gtid,
            HIDDEN_HELPER,
            std::mem::size_of::<KmpTask>(),
            0,
            routine,
            -1,
        )
    };
    if task.is_null() {
        return Spawned::NotAllocated(shareds);
    }
    // SAFETY: libomp returned a task block that starts with `kmp_task_t`,
    // not yet submitted, so no other thread sees it.
    unsafe { (*task).shareds = shareds };
    let ndeps = i32::try_from(deps.len()).unwrap_or(i32::MAX);
    let list = if deps.is_empty() {
        null_mut()
    } else {
        deps.as_mut_ptr().cast()
    };
    // SAFETY: `submit` is the non-null address dlsym found for libomp's
    // `kmp_int32 __kmpc_omp_task_with_deps(ident_t *, kmp_int32,
    // kmp_task_t *, kmp_int32 ndeps, kmp_depend_info_t *, kmp_int32,
    // kmp_depend_info_t *)`, the type transmuted to; `task` is the block
    // just allocated for this thread's gtid; `list` holds `ndeps`
    // `kmp_depend_info_t` copies (libomp reads them during the call), and
    // the noalias list is empty.
    Spawned::Submitted(unsafe {
        std::mem::transmute::<*mut c_void, Submit>(submit)(
            null_mut(),
            gtid,
            task,
            ndeps,
            list,
            0,
            null_mut(),
        )
    })
}

// libomp's `kmp_task_t` is 40 bytes on 64-bit targets (shareds, routine,
// part_id, data1, data2); the task allocation must cover all of it.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<KmpTask>() == 40);

/// libomp's `kmp_depend_info_t`: what an `omp_depend_t` points at.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct DependInfo {
    base_addr: isize,
    len: usize,
    /// The `in`/`out`/`mtx`/... bits, one byte (then padding).
    flags: u8,
}
