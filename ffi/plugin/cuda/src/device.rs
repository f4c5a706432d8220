//! One GPU: what the driver says of it, and, between `init_device` and
//! `deinit_device`, everything the plugin holds on it (the retained
//! primary context, allocations, streams, modules), so that teardown can
//! release all of it in one fixed order ([`DeviceState::release`]).

pub use crate::device_info::DeviceInfo;
use crate::driver::{check, CudaError};
pub use crate::memory::{alloc, free};
use crate::module::LoadedModule;
use cudarc::driver::sys::{self, CUcontext, CUdevice, CUevent, CUstream};
use omptarget_abi::AllocKind;
use std::collections::BTreeMap;

/// One allocation the runtime has not freed yet.
#[derive(Debug, Clone, Copy)]
pub struct Allocation {
    /// Bytes.
    pub size: usize,
    /// How it was allocated, hence how it is freed.
    pub kind: AllocKind,
}

/// Everything the plugin holds on an initialised device. Raw driver
/// handles; only [`crate::CudaBackend`] touches them, under the device's lock.
pub struct DeviceState {
    /// The retained primary context; released exactly once, last.
    pub context: CUcontext,
    /// Live allocations by address.
    pub allocations: BTreeMap<usize, Allocation>,
    /// Every stream this device created, idle or lent to a queue.
    pub streams: Vec<CUstream>,
    /// Streams not lent to any `__tgt_async_info`.
    pub idle_streams: Vec<CUstream>,
    /// Events created and not destroyed yet.
    pub events: Vec<CUevent>,
    /// Loaded modules, in load order.
    pub modules: Vec<LoadedModule>,
    /// Per-launch memory (launch environments) freed when its stream is
    /// synchronised; its blocks are in `allocations` too, so teardown frees
    /// whatever a never-synchronised queue left.
    pub deferred: Vec<Deferred>,
}

/// Device blocks of a queued launch, and the host bytes its copy reads.
pub struct Deferred {
    /// The stream the launch was queued on.
    pub stream: CUstream,
    /// Device addresses, each in `allocations`.
    pub blocks: Vec<usize>,
    /// The source of the queued host-to-device copy: kept until the
    /// stream is synchronised.
    pub host: Box<[u8; 16]>,
}

// SAFETY: the handles are the driver's, usable from any thread once the
// context is made current there (every operation does so first); the
// state is only reached through its device's mutex.
unsafe impl Send for DeviceState {}

/// Make `context` current on this thread (every driver call on a device
/// starts with it: the runtime calls entries from any thread).
///
/// # Safety
/// `context` is a primary context this plugin retained and has not
/// released.
pub unsafe fn make_current(context: CUcontext) -> Result<(), CudaError> {
    // SAFETY: per this function's contract.
    check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(context) })
}

/// What teardown released, for its debug line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Released {
    /// Modules unloaded.
    pub modules: usize,
    /// Device destructors run before their module was unloaded.
    pub dtors: usize,
    /// Why an unloaded module's device destructors failed, one per module.
    pub dtor_errors: Vec<String>,
    /// Allocations freed.
    pub blocks: usize,
    /// Bytes in them.
    pub bytes: usize,
    /// Streams destroyed.
    pub streams: usize,
    /// Events destroyed (the runtime left them).
    pub events: usize,
    /// Streams still lent to a queue nobody synchronised.
    pub unsynchronised_queues: usize,
}

impl DeviceState {
    /// Retain the primary context of `info`'s device and make it current.
    pub fn create(info: &DeviceInfo) -> Result<Self, CudaError> {
        let mut context = std::ptr::null_mut();
        // SAFETY: `context` is writable; the device handle is the driver's.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut context, info.handle)
        })?;
        // SAFETY: retained just above.
        if let Err(e) = unsafe { make_current(context) } {
            // SAFETY: retained just above; nothing else uses it.
            let _ = unsafe { sys::cuDevicePrimaryCtxRelease_v2(info.handle) };
            return Err(e);
        }
        Ok(Self {
            context,
            allocations: BTreeMap::new(),
            streams: Vec::new(),
            idle_streams: Vec::new(),
            events: Vec::new(),
            modules: Vec::new(),
            deferred: Vec::new(),
        })
    }

    /// An idle stream, or a new one.
    pub fn take_stream(&mut self) -> Result<CUstream, CudaError> {
        if let Some(stream) = self.idle_streams.pop() {
            return Ok(stream);
        }
        let mut stream = std::ptr::null_mut();
        // SAFETY: `stream` is writable; this device's context is current
        // (the caller made it so).
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(
                &mut stream,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
            )
        })?;
        self.streams.push(stream);
        Ok(stream)
    }

    /// Give a stream back to the pool, after it was synchronised: the
    /// per-launch memory of its launches is freed.
    pub fn give_stream(&mut self, stream: CUstream) -> Result<(), CudaError> {
        debug_assert!(self.streams.contains(&stream));
        self.idle_streams.push(stream);
        let mut result = Ok(());
        let mut i = 0;
        while i < self.deferred.len() {
            if self.deferred[i].stream != stream {
                i += 1;
                continue;
            }
            for block in self.deferred.swap_remove(i).blocks {
                if let Some(allocation) = self.allocations.remove(&block) {
                    result = result.and(free(block, allocation.kind));
                }
            }
        }
        result
    }

    /// A clang 19/22 `KernelLaunchEnvironmentTy` for a launch on `stream`:
    /// `ReductionCnt` and `ReductionIterCnt` zero, then the address of a
    /// new `buffer_bytes` reduction buffer; both freed when the stream is
    /// synchronised ([`DeviceState::give_stream`]). Returns its address.
    ///
    /// # Safety
    /// `stream` is a stream of this device, whose context is current.
    pub unsafe fn launch_environment(
        &mut self,
        stream: CUstream,
        buffer_bytes: usize,
    ) -> Result<usize, CudaError> {
        let mut deferred = Deferred {
            stream,
            blocks: Vec::with_capacity(2),
            host: Box::new([0u8; 16]),
        };
        let mut make = |size: usize, deferred: &mut Deferred| -> Result<usize, CudaError> {
            let address = alloc(size, AllocKind::Device)?;
            self.allocations.insert(
                address,
                Allocation {
                    size,
                    kind: AllocKind::Device,
                },
            );
            deferred.blocks.push(address);
            Ok(address)
        };
        let made = make(buffer_bytes, &mut deferred).and_then(|buffer| {
            let env = make(16, &mut deferred)?;
            deferred.host[8..].copy_from_slice(&(buffer as u64).to_le_bytes());
            Ok(env)
        });
        let host = deferred.host.as_ptr();
        // Recorded first: whatever happens next, the blocks are freed at
        // the stream's synchronisation (or at teardown).
        self.deferred.push(deferred);
        let env = made?;
        // SAFETY: `env` is a 16-byte block of this context; `host` is
        // boxed in the deferred record, alive until the stream is
        // synchronised; `stream` is this context's and current (this
        // function's contract).
        check("cuMemcpyHtoDAsync_v2", unsafe {
            sys::cuMemcpyHtoDAsync_v2(env as u64, host.cast(), 16, stream)
        })?;
        Ok(env)
    }

    /// Tear the device down in the documented order: synchronise, unload
    /// modules, free every allocation, destroy events and streams, release
    /// the primary context. Every step runs even if an earlier one failed
    /// (what it holds is released either way), except after
    /// `CUDA_ERROR_DEINITIALIZED`: the driver is gone, and everything it
    /// held with it, so no further call is made. The first error is returned.
    pub fn release(mut self, handle: CUdevice) -> (Released, Result<(), CudaError>) {
        let mut done = Released::default();
        let mut first: Option<CudaError> = None;
        // SAFETY: `self` holds the one retain of its context until the end
        // of this function.
        let mut alive = step(unsafe { make_current(self.context) }, &mut first);
        if alive {
            // SAFETY: the context is current.
            alive = step(
                check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }),
                &mut first,
            );
        }
        // Newest module first, the reverse of loading; each one's device
        // destructors before it goes (the runtime unloads images before
        // `deinit_device`, so these are images it left: LLVM's `deinit`
        // unloads them the same way).
        while alive {
            let Some(module) = self.modules.pop() else {
                break;
            };
            if let Some(fini) = &module.fini {
                match self.take_stream() {
                    Err(e) => alive = step(Err(e), &mut first),
                    Ok(stream) => {
                        match fini.run(stream, module.module) {
                            Ok(ran) => done.dtors += ran,
                            Err(e) => done.dtor_errors.push(e.to_string()),
                        }
                        alive = step(self.give_stream(stream), &mut first);
                    }
                }
            }
            if !alive {
                break;
            }
            alive = step(module.unload(), &mut first);
            done.modules += 1;
        }
        while alive {
            let Some((&address, &allocation)) = self.allocations.iter().next() else {
                break;
            };
            self.allocations.remove(&address);
            alive = step(free(address, allocation.kind), &mut first);
            done.blocks += 1;
            done.bytes += allocation.size;
        }
        while alive {
            let Some(event) = self.events.pop() else {
                break;
            };
            // SAFETY: an event of this context, destroyed once (popped).
            alive = step(
                check("cuEventDestroy_v2", unsafe {
                    sys::cuEventDestroy_v2(event)
                }),
                &mut first,
            );
            done.events += 1;
        }
        done.unsynchronised_queues = self.streams.len() - self.idle_streams.len();
        while alive {
            let Some(stream) = self.streams.pop() else {
                break;
            };
            // SAFETY: a stream of this context, destroyed once (popped).
            alive = step(
                check("cuStreamDestroy_v2", unsafe {
                    sys::cuStreamDestroy_v2(stream)
                }),
                &mut first,
            );
            done.streams += 1;
        }
        if alive {
            // SAFETY: the one retain of `create`, paired here; no handle of
            // this context is used afterwards (`self` is consumed).
            step(
                check("cuDevicePrimaryCtxRelease_v2", unsafe {
                    sys::cuDevicePrimaryCtxRelease_v2(handle)
                }),
                &mut first,
            );
        }
        (done, first.map_or(Ok(()), Err))
    }
}

/// Note a teardown call's outcome: keep the first error, and say whether
/// the driver is still there (false after `CUDA_ERROR_DEINITIALIZED`).
fn step(result: Result<(), CudaError>, first: &mut Option<CudaError>) -> bool {
    if let Err(e) = result {
        let gone = e.is_deinitialized();
        first.get_or_insert(e);
        return !gone;
    }
    true
}
