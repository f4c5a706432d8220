//! The OMPT connection with libomp, as LLVM 19's and 22's libomptarget
//! make it (their `ompt::connectLibrary`): at the first registration of a
//! binary of those releases, call libomp's `ompt_libomp_connect` with our
//! `ompt_start_tool_result_t`. If a tool is active, libomp calls our
//! `initialize` at once, with its lookup (`ompt_get_callback`, the task
//! data entries); we bind the tool's target and device callbacks there
//! ([`omptarget_openmp::ompt::Ompt::bind`]). libomp keeps the result and
//! calls our `finalize` from its own exit code, after the tool's.
//!
//! The table lives in a static of plain atomics, not in the session: libomp
//! may finalize at any point of the exit, before or after our session is
//! torn down. Nothing here has a destructor. LLVM 14's runtime has no OMPT,
//! so registrations of clang 14 binaries never connect.

use omptarget_openmp::ompt::{Lookup, Ompt};
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// The process's one OMPT table; every session's registry refers to it.
pub(crate) static OMPT: Ompt = Ompt::new();

/// The connection was tried (once per process, as LLVM's).
static CONNECTING: AtomicBool = AtomicBool::new(false);

/// The lookup libomp gave `initialize`, for the connecting thread to bind
/// once `ompt_libomp_connect` returns (the C call has no user pointer).
static LOOKUP: AtomicUsize = AtomicUsize::new(0);

/// `ompt_start_tool_result_t`.
#[repr(C)]
struct StartToolResult {
    initialize: unsafe extern "C" fn(Lookup, c_int, *mut c_void) -> c_int,
    finalize: unsafe extern "C" fn(*mut c_void),
    tool_data: u64,
}

/// The result libomp keeps a pointer to for the life of the process, in
/// writable memory (libomp's type is mutable, though it only reads it).
struct ResultCell(UnsafeCell<StartToolResult>);
// SAFETY: never written by us after construction; libomp only reads it.
unsafe impl Sync for ResultCell {}

static RESULT: ResultCell = ResultCell(UnsafeCell::new(StartToolResult {
    initialize,
    finalize,
    tool_data: 0,
}));

/// libomp's call when a tool is active: keep its lookup for the binding.
unsafe extern "C" fn initialize(lookup: Lookup, _device: c_int, _data: *mut c_void) -> c_int {
    LOOKUP.store(lookup as usize, Relaxed);
    0
}

/// libomp's call at its exit (after the tool's own finalize): no callback
/// is made after this.
unsafe extern "C" fn finalize(_data: *mut c_void) {
    OMPT.finalize();
}

/// Was the connection tried already? (Asked before the caller's release,
/// a stack walk, so that later registrations cost one load.)
pub(crate) fn tried() -> bool {
    CONNECTING.load(Relaxed)
}

/// `void ompt_libomp_connect(ompt_start_tool_result_t *)`.
type Connect = unsafe extern "C" fn(*mut StartToolResult);

/// Connect to libomp's OMPT once, for a registration by a binary of LLVM
/// 19 or later. Called holding no lock of ours: libomp initialises itself
/// here and may call back into the runtime (`omp_get_num_devices`).
pub(crate) fn connect_once() {
    if CONNECTING.swap(true, Relaxed) {
        return;
    }
    // SAFETY: a NUL-terminated name and `RTLD_DEFAULT`; dlsym only reads
    // the loader's tables.
    let connect = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ompt_libomp_connect".as_ptr()) };
    if connect.is_null() {
        return;
    }
    // SAFETY: libomp's `ompt_libomp_connect` has the C type `Connect`; it
    // calls `initialize` (if a tool is active) and keeps `RESULT`'s
    // address, which is static.
    unsafe { std::mem::transmute::<*mut c_void, Connect>(connect)(RESULT.0.get()) };
    let lookup = LOOKUP.load(Relaxed);
    if lookup != 0 {
        // SAFETY: the non-null function pointer libomp gave `initialize`:
        // libomp's lookup for a connected library.
        unsafe { OMPT.bind(std::mem::transmute::<usize, Lookup>(lookup)) };
    }
}
