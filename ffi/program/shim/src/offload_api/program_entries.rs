//! The `ol*` entries of programs, symbols and launches: loading an
//! object on a device, finding its kernels and variables, running a
//! kernel (`programs` says what a host kernel is and how it is called).
#![allow(non_snake_case)]

use super::boundary::{
    check, device_of, handle_arg, in_session, ol_entry, ol_info_entries, pointer_arg,
};
use super::context::{handle_of, Target};
use super::errors::{ol_error, Errc, Outcome};
use super::info::InfoOut;
use super::programs::{self, symbol_kind, LaunchSize};
use crate::session::Session;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

// Programs, symbols and launches (`programs`: the host kernels' calling
// convention).

/// The runtime's device a device handle names: `OL_ERRC_INVALID_DEVICE`
/// for the host device, which runs no program.
fn runtime_device(
    session: &Session,
    device: *const c_void,
) -> Outcome<(usize, &omptarget::Device)> {
    let (target, _) = device_of(session, device)?;
    let Target::Runtime(id) = target else {
        return Err(ol_error!(
            Errc::InvalidDevice,
            "the host device runs no programs"
        ));
    };
    let device = session
        .built_runtime()
        .and_then(|r| r.device(id).ok())
        .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))?;
    Ok((id, device))
}

ol_entry!(
    olCreateProgram,
    olCreateProgramWithCodeLoc,
    |session, device: *const c_void, data: *const c_void, size: usize, out: *mut *mut c_void| {
        handle_arg!(device, "Device")?;
        pointer_arg!(data, "ProgData")?;
        pointer_arg!(out, "Program")?;
        let (id, runtime_device) = runtime_device(session, device)?;
        // SAFETY: `data` holds `size` readable bytes (the caller's
        // contract); they are copied before the call returns.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        // SAFETY: the program asks for its object to be loaded, and so
        // vouches for its initialisers and finalisers.
        let program = unsafe { programs::load(runtime_device, id, bytes) }?;
        let mut loaded = Some(program);
        let added = session.offload_api().with(|c| {
            c.device(handle_of(device))?;
            Ok(c.add_program(loaded.take().expect("taken once")))
        });
        let handle = match (added, loaded) {
            (Ok(handle), _) => handle,
            // Shut down meanwhile: nobody can name it, so it goes now.
            (Err(e), Some(program)) => {
                let _ = programs::release(runtime_device, program.loaded);
                return Err(e);
            }
            (Err(e), None) => return Err(e),
        };
        // SAFETY: `out` is writable (the caller's contract, checked non-null).
        unsafe { out.write(handle as *mut c_void) };
        Ok(())
    }
);

ol_entry!(
    olDestroyProgram,
    olDestroyProgramWithCodeLoc,
    |session, program: *const c_void| {
        handle_arg!(program, "Program")?;
        let program = session
            .offload_api()
            .with(|c| c.take_program(handle_of(program)))?;
        let device = session
            .built_runtime()
            .and_then(|r| r.device(program.loaded.device_id).ok())
            .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))?;
        programs::release(device, program.loaded)
    }
);

ol_entry!(
    olGetSymbol,
    olGetSymbolWithCodeLoc,
    |session, program: *const c_void, name: *const c_char, kind: u32, out: *mut *mut c_void| {
        handle_arg!(program, "Program")?;
        pointer_arg!(name, "Name")?;
        pointer_arg!(out, "Symbol")?;
        if kind != symbol_kind::KERNEL && kind != symbol_kind::GLOBAL_VARIABLE {
            return Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_symbol_kind_t value"
            ));
        }
        // SAFETY: a NUL-terminated string (the caller's contract).
        let name = unsafe { std::ffi::CStr::from_ptr(name) };
        let handle = session.offload_api().with(|c| {
            let program = c.program(handle_of(program))?;
            program
                .symbols
                .iter()
                .find(|(n, s)| s.kind == kind && name.to_str() == Ok(n.as_str()))
                .map(|(_, s)| s.handle)
                .ok_or(ol_error!(
                    Errc::NotFound,
                    "the program exports no symbol of that name and kind"
                ))
        })?;
        // SAFETY: `out` is writable (the caller's contract, checked non-null).
        unsafe { out.write(handle as *mut c_void) };
        Ok(())
    }
);

/// `ol_symbol_info_t` values.
mod symbol_key {
    pub const KIND: u32 = 0;
    pub const GLOBAL_VARIABLE_ADDRESS: u32 = 1;
    pub const GLOBAL_VARIABLE_SIZE: u32 = 2;
}

/// `olGetSymbolInfo[Size]`.
///
/// # Safety
/// `out`'s pointers are the caller's, as [`InfoOut`] requires.
unsafe fn answer_symbol(
    session: &Session,
    symbol: *const c_void,
    prop: u32,
    out: &InfoOut,
) -> Outcome {
    let symbol = session
        .offload_api()
        .with(|c| c.symbol(handle_of(symbol)).copied())?;
    let variable = || {
        check(
            symbol.kind != symbol_kind::GLOBAL_VARIABLE,
            ol_error!(Errc::SymbolKind, "the symbol is not a global variable"),
        )
    };
    // SAFETY: each `out` call below writes what our contract allows.
    unsafe {
        match prop {
            symbol_key::KIND => out.write(symbol.kind),
            symbol_key::GLOBAL_VARIABLE_ADDRESS => {
                variable()?;
                out.write(symbol.addr as *const c_void)
            }
            symbol_key::GLOBAL_VARIABLE_SIZE => {
                variable()?;
                out.write(symbol.size)
            }
            _ => Err(ol_error!(
                Errc::InvalidEnumeration,
                "not an ol_symbol_info_t value"
            )),
        }
    }
}

ol_info_entries!(
    olGetSymbolInfo,
    olGetSymbolInfoWithCodeLoc,
    olGetSymbolInfoSize,
    olGetSymbolInfoSizeWithCodeLoc,
    symbol,
    ol_error!(Errc::InvalidNullHandle, "NULL == Symbol"),
    answer_symbol
);

ol_entry!(
    olLaunchKernel,
    olLaunchKernelWithCodeLoc,
    |session,
     queue: *const c_void,
     device: *const c_void,
     kernel: *const c_void,
     args: *const c_void,
     size: usize,
     launch: *const LaunchSize| {
        check(
            size > 0 && args.is_null(),
            ol_error!(
                Errc::InvalidArgument,
                "ArgumentsSize > 0 && ArgumentsData == NULL"
            ),
        )?;
        handle_arg!(device, "Device")?;
        handle_arg!(kernel, "Kernel")?;
        pointer_arg!(launch, "LaunchSizeArgs")?;
        let (symbol, loaded, lane) = session.offload_api().with(|c| {
            let device = c.device(handle_of(device))?;
            let lane = match queue.is_null() {
                true => None,
                false => {
                    let queue = c.queue(handle_of(queue))?;
                    if queue.device != device.handle {
                        return Err(ol_error!(
                            Errc::InvalidDevice,
                            "device specified does not match the device of the given queue"
                        ));
                    }
                    Some(Arc::clone(&queue.lane))
                }
            };
            let (symbol, loaded) = c.symbol_and_program(handle_of(kernel))?;
            Ok((symbol, loaded, lane))
        })?;
        let (id, runtime_device) = runtime_device(session, device)?;
        if symbol.device_id != id {
            return Err(ol_error!(
                Errc::InvalidDevice,
                "the kernel's program is loaded on another device"
            ));
        }
        // SAFETY: `launch` is readable (the caller's contract).
        let checked = unsafe { programs::check_launch(loaded.local, &symbol, args, size, launch) }?;
        // The caller's contract, for each `launch`: `args` holds `size`
        // bytes of arguments the kernel expects.
        let Some(lane) = lane else {
            // SAFETY: the contract above.
            return unsafe {
                programs::launch(runtime_device, loaded, &symbol, args, size, &checked)
            };
        };
        // SAFETY: the contract above.
        let now = || unsafe {
            programs::launch(
                runtime_device,
                loaded.clone(),
                &symbol,
                args,
                size,
                &checked,
            )
        };
        lane.submit(now, || {
            // Queued: the argument block is copied now, as LLVM's is.
            // SAFETY: readable for `size` bytes (the caller's contract).
            let block = unsafe { std::slice::from_raw_parts(args.cast::<u8>(), size) }.to_vec();
            let loaded = loaded.clone();
            in_session(move |s| {
                let device = s
                    .built_runtime()
                    .and_then(|r| r.device(id).ok())
                    .ok_or(ol_error!(Errc::InvalidDevice, "the device is gone"))?;
                // SAFETY: the contract above, for the copy of the block.
                unsafe {
                    programs::launch(
                        device,
                        loaded,
                        &symbol,
                        block.as_ptr().cast(),
                        size,
                        &checked,
                    )
                }
            })
        })
    }
);

ol_entry!(
    olIsValidBinary,
    olIsValidBinaryWithCodeLoc,
    |session, device: *const c_void, data: *const c_void, size: usize, valid: *mut bool| {
        handle_arg!(device, "Device")?;
        pointer_arg!(data, "ProgData")?;
        pointer_arg!(valid, "Valid")?;
        let (target, _) = device_of(session, device)?;
        // SAFETY: `data` holds `size` readable bytes (the caller's contract).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        let answer = match target {
            // The initial device runs no program.
            Target::Host => false,
            Target::Runtime(id) => session
                .built_runtime()
                .and_then(|r| r.device(id).ok())
                .is_some_and(|d| programs::is_valid(d, bytes)),
        };
        // SAFETY: `valid` is writable (the caller's contract, checked non-null).
        unsafe { valid.write(answer) };
        Ok(())
    }
);

ol_entry!(
    olCalculateOptimalOccupancy,
    olCalculateOptimalOccupancyWithCodeLoc,
    |session, device: *const c_void, kernel: *const c_void, shared: usize, out: *mut usize| {
        handle_arg!(device, "Device")?;
        handle_arg!(kernel, "Kernel")?;
        pointer_arg!(out, "GroupSize")?;
        let symbol = session
            .offload_api()
            .with(|c| c.symbol(handle_of(kernel)).copied())?;
        check(
            symbol.kind != symbol_kind::KERNEL,
            ol_error!(Errc::SymbolKind, "provided symbol is not a kernel"),
        )?;
        let (id, _) = runtime_device(session, device)?;
        check(
            symbol.device_id != id,
            ol_error!(
                Errc::InvalidDevice,
                "the kernel's program is loaded on another device"
            ),
        )?;
        check(
            shared > 0,
            ol_error!(
                Errc::Unsupported,
                "a host device has no dynamic shared memory"
            ),
        )?;
        // A host device runs a group of one item (see `programs`).
        // SAFETY: `out` is writable (the caller's contract, checked non-null).
        unsafe { out.write(1) };
        Ok(())
    }
);
