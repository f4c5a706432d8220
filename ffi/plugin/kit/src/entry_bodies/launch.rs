//! The launch entries' bodies (`__tgt_rtl_run_target[_team]_region[_async]`
//! and the typed launch): their arguments gathered on the stack, the
//! backend called, a kernel's thread exit carried past the panic boundary
//! (a C entry's) or left to the caller (a native call's).
//! The module docs of [`super`] hold for them.

use super::*;

/// Fill `values` with `args[i] + offsets[i]` (the launch entries' argument
/// arrays; untouched, and allowed null, when `values` is empty).
///
/// # Safety
/// Non-null `args` and `offsets` hold `values.len()` elements each.
unsafe fn gather_args(
    values: &mut [*mut c_void],
    args: *mut *mut c_void,
    offsets: *mut isize,
) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let args = non_null("args", args)?.as_ptr();
    let offsets = non_null("offsets", offsets)?.as_ptr();
    for (i, value) in values.iter_mut().enumerate() {
        // SAFETY: non-null arrays of `values.len()` elements (contract).
        *value = unsafe { (*args.add(i)).wrapping_byte_offset(*offsets.add(i)) };
    }
    Ok(())
}

/// `__tgt_rtl_run_target[_team]_region[_async]`: `teams` is `None` for a
/// plain target region.
///
/// # Safety
/// See the module docs; `entry` must come from a target table of `device`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn run_region<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    num_args: i32,
    teams: Option<TeamConfig>,
    async_info: Option<*mut AsyncInfo>,
) -> i32 {
    let is_async = async_info.is_some();
    let name = match (teams.is_some(), is_async) {
        (false, false) => names::RUN_TARGET_REGION,
        (false, true) => names::RUN_TARGET_REGION_ASYNC,
        (true, false) => names::RUN_TARGET_TEAM_REGION,
        (true, true) => names::RUN_TARGET_TEAM_REGION_ASYNC,
    };
    let code = launch_status::<B, K>(name, || {
        observe::<B>(if teams.is_some() {
            EntryCall::RunTargetTeamRegion { device, is_async }
        } else {
            EntryCall::RunTargetRegion { device, is_async }
        });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let entry = non_null("entry", entry)?;
            let count = usize::try_from(num_args).map_err(|_| {
                PluginError::InvalidArgument(format!("`num_args` is negative ({num_args})"))
            })?;
            // The argument values, on the stack for common kernels: a launch
            // allocates nothing here.
            let mut inline = [ptr::null_mut::<c_void>(); INLINE_ARGS];
            let mut heap = Vec::new();
            let values: &mut [*mut c_void] = if count <= inline.len() {
                &mut inline[..count]
            } else {
                heap.resize(count, ptr::null_mut());
                &mut heap
            };
            // SAFETY: `num_args` elements each (module contract).
            unsafe { gather_args(values, args, offsets)? };
            let backend = live.backend();
            queue::on_queue(backend, device, queue_arg(async_info), |queue| {
                // SAFETY: `entry` is a kernel of an image loaded on this
                // device whose parameters match `values` (module contract;
                // the host backend also checks the entry against its images).
                unsafe { backend.run_region(device, entry, values, None, teams, queue) }
            })
        })
    });
    // A kernel that ended its thread (the backend left the exit pending):
    // a C entry resumes it here, past its panic boundary; a native call
    // leaves it to its caller.
    K::after_launch();
    code
}

/// `__tgt_rtl_run_typed_region`: `num_teams < 0` runs a region without
/// teams; `arg_types` holds one [`KernelArgType`] code per argument.
///
/// # Safety
/// See the module docs; `entry` must come from a target table of `device`
/// and `arg_types` is an array of `num_args` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn run_typed_region<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    device: i32,
    entry: *mut c_void,
    args: *mut *mut c_void,
    offsets: *mut isize,
    arg_types: *const u8,
    num_args: i32,
    teams: Option<TeamConfig>,
    async_info: *mut AsyncInfo,
) -> i32 {
    let code = launch_status::<B, K>(names::RUN_TYPED_REGION, || {
        observe::<B>(if teams.is_some() {
            EntryCall::RunTargetTeamRegion {
                device,
                is_async: false,
            }
        } else {
            EntryCall::RunTargetRegion {
                device,
                is_async: false,
            }
        });
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let entry = non_null("entry", entry)?;
            let count = usize::try_from(num_args).map_err(|_| {
                PluginError::InvalidArgument(format!("`num_args` is negative ({num_args})"))
            })?;
            let mut inline = [ptr::null_mut::<c_void>(); INLINE_ARGS];
            let mut inline_types = [KernelArgType::Pointer; INLINE_ARGS];
            let (mut heap, mut heap_types) = (Vec::new(), Vec::new());
            let (values, types): (&mut [*mut c_void], &mut [KernelArgType]) =
                if count <= INLINE_ARGS {
                    (&mut inline[..count], &mut inline_types[..count])
                } else {
                    heap.resize(count, ptr::null_mut());
                    heap_types.resize(count, KernelArgType::Pointer);
                    (&mut heap, &mut heap_types)
                };
            // SAFETY: `num_args` elements each (this function's contract).
            unsafe { gather_args(values, args, offsets)? };
            if count > 0 {
                let codes = non_null("arg_types", arg_types as *mut u8)?.as_ptr();
                for (i, ty) in types.iter_mut().enumerate() {
                    // SAFETY: a non-null array of `num_args` bytes (this
                    // function's contract), and i < count.
                    let code = unsafe { *codes.add(i) };
                    *ty = KernelArgType::from_code(code).ok_or_else(|| {
                        PluginError::InvalidArgument(format!(
                            "argument {i} has the unknown type code {code}"
                        ))
                    })?;
                }
            }
            let backend = live.backend();
            queue::on_queue(backend, device, queue_arg(Some(async_info)), |queue| {
                // SAFETY: `entry` is a kernel of an image loaded on this
                // device whose parameters have `types` (this function's
                // contract).
                unsafe { backend.run_region(device, entry, values, Some(types), teams, queue) }
            })
        })
    });
    K::after_launch();
    code
}
