//! The `_async` copies and fill as LLVM 19 and 22 run them: a libomp
//! hidden-helper task, ordered by the caller's dependence objects, that
//! runs the blocking call (LLVM's `libomp_helper_task_creation`,
//! `OpenMP/API.cpp`).
//!
//! The task waits for the tasks its `in` dependences name, and later tasks
//! that depend on what it writes wait for it, whether the copy completes at
//! once (the host plugin) or on a device queue (CUDA): the blocking call
//! synchronises before the task ends. Running the copy in the caller
//! instead, as this runtime did, ignored its predecessors: LLVM's
//! `api/omp_target_memcpy_async2.c` read `p` and `c` before the tasks
//! writing them had run.
//!
//! What the task needs is moved into one heap block the task owns
//! (`shareds`); a `memcpy_rect`'s five shape arrays are copied into it,
//! since the caller's arrays may be gone when the task runs (LLVM keeps
//! the caller's pointers). The task's diagnostics are worded for the
//! submitting caller's release (the helper thread's stack has no frame of
//! the program). Without libomp's tasking entries (a Rust program using
//! the shim directly) the call runs at once, as before: there are no
//! tasks to order against.

use crate::boundary::guard;
use crate::caller;
use crate::libomp::{self, DependInfo, KmpTask};
use omptarget_abi::OFFLOAD_FAIL;
use omptarget_openmp::{Diagnostic, Release};
use std::ffi::{c_int, c_void};

/// One `_async` operation, with what the blocking call needs.
pub(crate) enum AsyncOp {
    /// `omp_target_memcpy`'s arguments.
    Memcpy {
        dst: *mut c_void,
        src: *const c_void,
        length: usize,
        dst_offset: usize,
        src_offset: usize,
        dst_device: c_int,
        src_device: c_int,
    },
    /// `omp_target_memcpy_rect`'s; `shape` holds the volume, dst offsets,
    /// src offsets, dst dimensions and src dimensions, `num_dims` each.
    Rect {
        dst: *mut c_void,
        src: *const c_void,
        element_size: usize,
        num_dims: c_int,
        shape: Box<[usize]>,
        dst_device: c_int,
        src_device: c_int,
    },
    /// `omp_target_memset`'s.
    Memset {
        ptr: *mut c_void,
        byte: c_int,
        len: usize,
        device: c_int,
    },
}

impl AsyncOp {
    /// Run the blocking call; its result (`omp_target_memset`'s pointer
    /// is dropped, as LLVM's task drops it).
    ///
    /// # Safety
    /// The blocking call's contract: the addresses name memory of their
    /// devices, of the sizes the arguments say.
    unsafe fn run(self) -> c_int {
        match self {
            AsyncOp::Memcpy {
                dst,
                src,
                length,
                dst_offset,
                src_offset,
                dst_device,
                src_device,
            } => {
                // SAFETY: our `# Safety`.
                unsafe {
                    crate::copies::memcpy_as(
                        "omp_target_memcpy_async",
                        dst,
                        src,
                        length,
                        dst_offset,
                        src_offset,
                        dst_device,
                        src_device,
                    )
                }
            }
            AsyncOp::Rect {
                dst,
                src,
                element_size,
                num_dims,
                shape,
                dst_device,
                src_device,
            } => {
                let rect = crate::rect::Rect::from_shape(element_size, num_dims, &shape);
                // SAFETY: our `# Safety`; the arrays are `shape`'s five
                // parts of `num_dims` elements each, alive for the call.
                unsafe {
                    crate::copies::memcpy_rect_as(
                        "omp_target_memcpy_rect_async",
                        dst,
                        src,
                        rect,
                        dst_device,
                        src_device,
                    )
                }
            }
            AsyncOp::Memset {
                ptr,
                byte,
                len,
                device,
            } => {
                // SAFETY: our `# Safety`.
                unsafe {
                    crate::copies::memset_as("omp_target_memset_async", ptr, byte, len, device)
                };
                0
            }
        }
    }
}

/// What a task owns: the operation and the release to word it for.
struct Work {
    op: AsyncOp,
    release: Release,
}

/// Run `op` after the tasks `depobj_list`'s `depobj_count` dependence
/// objects name, as a hidden-helper task. Returns what LLVM's call
/// returns: the task submission's result (0), or `OFFLOAD_FAIL` when libomp
/// could not allocate the task or a dependence object is null (an error
/// line says which); without libomp's tasking entries, the result of
/// running `op` now.
///
/// # Safety
/// `op`'s blocking call's contract, until the task has run; `depobj_list`
/// is null or holds `depobj_count` `omp_depend_t` values, each null or a
/// `kmp_depend_info_t` libomp's `depobj` construct initialised.
pub(crate) unsafe fn submit(
    entry: &'static str,
    op: AsyncOp,
    depobj_count: c_int,
    depobj_list: *const *const DependInfo,
) -> c_int {
    guard(entry, OFFLOAD_FAIL, || {
        let count = usize::try_from(depobj_count).unwrap_or(0);
        let mut deps = Vec::with_capacity(count);
        if count > 0 && depobj_list.is_null() {
            return refuse(entry, "the dependence object list is null");
        }
        for i in 0..count {
            // SAFETY: our `# Safety`: `count` readable `omp_depend_t`s.
            let depobj = unsafe { *depobj_list.add(i) };
            if depobj.is_null() {
                return refuse(entry, &format!("dependence object {i} is null"));
            }
            // SAFETY: our `# Safety`: a non-null `omp_depend_t` points at an
            // initialised `kmp_depend_info_t`.
            deps.push(unsafe { *depobj });
        }
        let work = Box::new(Work {
            op,
            release: caller::calling_release(),
        });
        match libomp::spawn_helper_task(run_task, Box::into_raw(work).cast(), &mut deps) {
            libomp::Spawned::Submitted(rc) => rc,
            libomp::Spawned::NotAllocated(shareds) => {
                // SAFETY: `shareds` is the `Box<Work>` passed above, which
                // libomp did not take.
                drop(unsafe { Box::from_raw(shareds.cast::<Work>()) });
                OFFLOAD_FAIL
            }
            libomp::Spawned::NoTasking(shareds) => {
                // SAFETY: as above: ours again, never given to libomp.
                let work = unsafe { Box::from_raw(shareds.cast::<Work>()) };
                // SAFETY: our `# Safety`: the blocking call's contract.
                unsafe { work.op.run() }
            }
        }
    })
}

/// Say why an `_async` call was refused, in the caller's release's words.
fn refuse(entry: &str, why: &str) -> c_int {
    use omptarget_openmp::HostEnv;
    crate::session::host_env::Libomp.emit(&Diagnostic::Error(format!("{entry}: {why}")));
    OFFLOAD_FAIL
}

/// The task's routine, run by libomp (on a hidden-helper thread): take the
/// work out of `shareds` and run it for the submitting caller's release.
extern "C" fn run_task(_gtid: i32, task: *mut KmpTask) -> i32 {
    guard("an _async call's helper task", OFFLOAD_FAIL, || {
        if task.is_null() {
            return OFFLOAD_FAIL;
        }
        // SAFETY: libomp passes the task `spawn_helper_task` allocated,
        // whose `shareds` is the `Box<Work>` `submit` leaked into it; the
        // task runs once, so the box is taken once.
        let work = unsafe {
            let shareds = std::mem::replace(&mut (*task).shareds, std::ptr::null_mut());
            if shareds.is_null() {
                return OFFLOAD_FAIL;
            }
            Box::from_raw(shareds.cast::<Work>())
        };
        let Work { op, release } = *work;
        // SAFETY: `submit`'s caller promised the blocking call's contract
        // until the task has run.
        caller::on_behalf_of(release, || {
            // SAFETY: as above.
            crate::session::lifecycle::as_helper_task(|| unsafe { op.run() })
        })
    })
}
