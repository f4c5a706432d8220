//! The liboffload context of a session: what `olInit` creates and the last
//! `olShutDown` releases, and the handles the program holds into it.
//!
//! * Platforms and devices: one platform per loaded plugin that has
//!   devices (its devices are the runtime's, the same ones the OpenMP API
//!   numbers), then the host platform with one device, the initial device
//!   (LLVM 22 lists its "virtual host device" last too).
//! * A handle is a number, never an address: taken from a process-wide
//!   counter and never given twice, so a stale handle (a destroyed queue,
//!   the handles of a context shut down) can never name a newer object,
//!   and a null or foreign one is an error code. Nothing is ever read
//!   through a handle.
//! * Memory from `olMemAlloc` is recorded by address (`olMemFree` takes
//!   only the address), as disjoint ranges: on a runtime device it is the
//!   device's own allocation (its memory manager's, so the OpenMP API and
//!   the shutdown report see it as they see `omp_target_alloc`'s); on the
//!   host device it is `malloc`'s.
//! * The lock is never held across a call into the runtime or the
//!   program (`olIterateDevices`' callback may call back in).

use super::errors::{ol_error, Errc, Outcome, UNINITIALIZED};
use super::handles::new_handle;
pub(crate) use super::handles::{handle_of, Handle};
use super::programs::{Loaded, Program, Symbol};
use super::queues::Lane;
use crate::session::lifecycle::forks_seen;
use omptarget::{DevicePtr, Runtime};
use omptarget_abi::AllocKind;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// `ol_platform_backend_t`.
pub(crate) mod backend {
    pub(crate) const UNKNOWN: u32 = 0;
    pub(crate) const CUDA: u32 = 1;
    pub(crate) const HOST: u32 = 4;
}

/// `ol_alloc_type_t`.
pub(crate) mod alloc_type {
    pub(crate) const HOST: u32 = 0;
    pub(crate) const DEVICE: u32 = 1;
}

/// A platform handle's record.
pub(crate) struct Platform {
    pub handle: Handle,
    /// `OL_PLATFORM_INFO_NAME`: the plugin's short name (`x86_64`,
    /// `cuda`, `mpi`), or `Host`.
    pub name: String,
    /// `ol_platform_backend_t`.
    pub backend: u32,
}

/// What a device handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The initial device: the host itself (memory is `malloc`'s).
    Host,
    /// The runtime's device with this number.
    Runtime(usize),
}

/// A device handle's record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Device {
    pub handle: Handle,
    /// Its platform's handle.
    pub platform: Handle,
    pub target: Target,
}

/// A queue handle's record.
pub(crate) struct Queue {
    pub handle: Handle,
    /// The device handle it was made for.
    pub device: Handle,
    /// Its order of work (`queues`).
    pub lane: Arc<Lane>,
}

/// An event handle's record: a position in its queue's order of work.
pub(crate) struct Event {
    pub handle: Handle,
    /// The queue it was made on (which may be destroyed since, as LLVM's
    /// events may outlive their queue).
    pub queue: Handle,
    /// That queue's order of work, and the event's position in it.
    pub lane: Arc<Lane>,
    pub position: u64,
}

/// Host memory registered with a device (`olMemRegister`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Registration {
    pub device: Handle,
    pub base: usize,
    pub size: usize,
    /// Registrations of this range or of ranges inside it, each undone by
    /// one `olMemUnregister`.
    pub users: usize,
}

/// An `olMemAlloc` block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allocation {
    pub target: Target,
    /// The device handle it was allocated on.
    pub device: Handle,
    /// `ol_alloc_type_t`, as the program gave it.
    pub kind: u32,
    pub size: usize,
}

/// What `olInit` made.
pub(crate) struct Context {
    /// `olInit` calls not yet matched by an `olShutDown`.
    refcount: usize,
    platforms: Vec<Platform>,
    devices: Vec<Device>,
    queues: Vec<Queue>,
    /// The orders of work of destroyed queues whose workers may still run
    /// (joined once they have ended, or at the end).
    retired: Vec<Arc<Lane>>,
    events: Vec<Event>,
    programs: Vec<Program>,
    registrations: Vec<Registration>,
    /// Live `olMemAlloc` blocks by address; their ranges are disjoint.
    allocations: BTreeMap<usize, Allocation>,
}

/// What the last `olShutDown` (or the session's end) leaves to release
/// outside the lock: the queues' orders of work (to finish or drop, and
/// their workers to end), the programs still loaded and the blocks not
/// freed.
pub(crate) struct Leftovers {
    pub lanes: Vec<Arc<Lane>>,
    pub programs: Vec<Program>,
    pub blocks: Vec<(usize, Allocation)>,
}

impl From<Context> for Leftovers {
    fn from(context: Context) -> Leftovers {
        let lanes = context.queues.into_iter().map(|q| q.lane);
        Leftovers {
            lanes: lanes.chain(context.retired).collect(),
            programs: context.programs,
            blocks: context.allocations.into_iter().collect(),
        }
    }
}

/// The short name of a plugin's file (`libomptarget.rtl.x86_64.so` ->
/// `x86_64`).
fn short_name(plugin: &str) -> &str {
    let name = plugin.strip_prefix("libomptarget.rtl.").unwrap_or(plugin);
    name.strip_suffix(".so").unwrap_or(name)
}

impl Context {
    /// What the program left in this context (never destroyed, freed or
    /// unregistered), one line each, for the shutdown report; `at_end`: left
    /// to the session's end (no last `olShutDown`), where blocks on the
    /// runtime's devices are the teardown's to free and list (as the
    /// program's allocations), so they are not listed here. Queues and
    /// events of a parent process (made before a fork) are not the
    /// child's to destroy, so a child does not list them.
    fn leaks(&self, at_end: bool) -> Vec<String> {
        let when = match at_end {
            true => "left to the session's end: no last olShutDown",
            false => "left to the last olShutDown",
        };
        let queues = self
            .queues
            .iter()
            .filter(|q| q.lane.is_this_process())
            .map(|q| {
                format!(
                    "queue {:#x} on device {:#x}, never destroyed ({when})",
                    q.handle, q.device
                )
            });
        let events = self
            .events
            .iter()
            .filter(|e| e.lane.is_this_process())
            .map(|e| {
                format!(
                    "event {:#x} of queue {:#x}, never destroyed ({when})",
                    e.handle, e.queue
                )
            });
        let programs = self.programs.iter().map(|p| {
            format!(
                "program {:#x} on device {}, never destroyed ({when})",
                p.handle, p.loaded.device_id
            )
        });
        let registrations = self.registrations.iter().map(|r| {
            format!(
                "olMemRegister range {:#x}, {} bytes, on device {:#x}, never unregistered ({when})",
                r.base, r.size, r.device
            )
        });
        let blocks = self
            .allocations
            .iter()
            .filter(|(_, b)| !at_end || b.target == Target::Host)
            .map(|(address, b)| {
                format!(
                    "olMemAlloc block {address:#x}, {} bytes, never freed ({when})",
                    b.size
                )
            });
        queues
            .chain(events)
            .chain(programs)
            .chain(registrations)
            .chain(blocks)
            .collect()
    }

    /// No platform, device or handle yet.
    fn empty() -> Context {
        Context {
            refcount: 0,
            platforms: Vec::new(),
            devices: Vec::new(),
            queues: Vec::new(),
            retired: Vec::new(),
            events: Vec::new(),
            programs: Vec::new(),
            registrations: Vec::new(),
            allocations: BTreeMap::new(),
        }
    }

    /// The platforms and devices of `runtime`, then the host's. Asks the
    /// plugins what their devices are: never under the state's lock.
    fn new(runtime: &Runtime) -> Context {
        let mut context = Context::empty();
        let mut first = 0;
        for index in 0..runtime.plugin_count() {
            let Some(plugin) = runtime.plugin(index) else {
                continue;
            };
            let count = plugin.device_count();
            if count == 0 {
                continue;
            }
            // The backend is what the devices are, asked of them, never
            // read from a file name.
            let backend = match runtime.plugin_device(index, 0).and_then(|d| d.kind()) {
                Some(omptarget::DeviceKind::CudaGpu) => backend::CUDA,
                _ => backend::UNKNOWN,
            };
            let platform = new_handle();
            context.platforms.push(Platform {
                handle: platform,
                name: short_name(plugin.name()).to_owned(),
                backend,
            });
            for id in first..first + count {
                context.devices.push(Device {
                    handle: new_handle(),
                    platform,
                    target: Target::Runtime(id),
                });
            }
            first += count;
        }
        let platform = new_handle();
        context.platforms.push(Platform {
            handle: platform,
            name: "Host".to_owned(),
            backend: backend::HOST,
        });
        context.devices.push(Device {
            handle: new_handle(),
            platform,
            target: Target::Host,
        });
        context
    }

    /// The device `handle` names, if it is one of this context's.
    pub(crate) fn device(&self, handle: Handle) -> Outcome<Device> {
        self.devices
            .iter()
            .find(|d| d.handle == handle)
            .copied()
            .ok_or(ol_error!(
                Errc::InvalidDevice,
                "not a device handle of this liboffload context"
            ))
    }

    /// The platform `handle` names, if it is one of this context's.
    pub(crate) fn platform(&self, handle: Handle) -> Outcome<&Platform> {
        self.platforms
            .iter()
            .find(|p| p.handle == handle)
            .ok_or(ol_error!(
                Errc::InvalidPlatform,
                "not a platform handle of this liboffload context"
            ))
    }

    /// Every device handle, in iteration order.
    pub(crate) fn device_handles(&self) -> Vec<Handle> {
        self.devices.iter().map(|d| d.handle).collect()
    }

    /// The queue `handle` names, if it is live.
    pub(crate) fn queue(&self, handle: Handle) -> Outcome<&Queue> {
        self.queues
            .iter()
            .find(|q| q.handle == handle)
            .ok_or(ol_error!(
                Errc::InvalidQueue,
                "not a live queue of this liboffload context"
            ))
    }

    /// A new queue on the device `device` (checked by the caller).
    pub(crate) fn create_queue(&mut self, device: Handle) -> Handle {
        let handle = new_handle();
        self.queues.push(Queue {
            handle,
            device,
            lane: Lane::new(),
        });
        handle
    }

    /// Destroy the queue `handle`: its work goes on, its events stay valid
    /// (never waits). Joins the workers of destroyed queues that have
    /// ended, so that a program making queues in a loop keeps no threads.
    pub(crate) fn destroy_queue(&mut self, handle: Handle) -> Outcome {
        self.queue(handle)?;
        let index = self.queues.iter().position(|q| q.handle == handle);
        let queue = self.queues.remove(index.expect("found above"));
        queue.lane.close_after_drain();
        self.retired.retain(|lane| {
            let ended = lane.is_finished();
            if ended {
                lane.stop();
            }
            !ended
        });
        self.retired.push(queue.lane);
        Ok(())
    }

    /// A new event at the end of the queue `queue`'s work so far.
    pub(crate) fn create_event(&mut self, queue: Handle) -> Outcome<Handle> {
        let lane = Arc::clone(&self.queue(queue)?.lane);
        let position = lane.mark()?;
        let handle = new_handle();
        self.events.push(Event {
            handle,
            queue,
            lane,
            position,
        });
        Ok(handle)
    }

    /// The event `handle` names, if it is live.
    pub(crate) fn event(&self, handle: Handle) -> Outcome<&Event> {
        self.events
            .iter()
            .find(|e| e.handle == handle)
            .ok_or(ol_error!(
                Errc::InvalidEvent,
                "not a live event of this liboffload context"
            ))
    }

    /// Destroy the event `handle`.
    pub(crate) fn destroy_event(&mut self, handle: Handle) -> Outcome {
        self.event(handle)?;
        self.events.retain(|e| e.handle != handle);
        Ok(())
    }

    /// Register `base..base+size` with the device `device`: a range that
    /// lies inside a registered one (or is it) adds a user to it; one that
    /// overlaps a registered range partly is refused, as LLVM's.
    pub(crate) fn register(&mut self, device: Handle, base: usize, size: usize) -> Outcome {
        let end = base.checked_add(size).ok_or(ol_error!(
            Errc::InvalidSize,
            "the range runs past the end of the address space"
        ))?;
        for r in self.registrations.iter_mut().filter(|r| r.device == device) {
            let r_end = r.base + r.size;
            if base >= r.base && end <= r_end {
                r.users += 1;
                return Ok(());
            }
            if base < r_end && r.base < end {
                return Err(ol_error!(
                    Errc::InvalidArgument,
                    "the range overlaps a registered range partly"
                ));
            }
        }
        self.registrations.push(Registration {
            device,
            base,
            size,
            users: 1,
        });
        Ok(())
    }

    /// Undo one registration of the range of `device` that holds `ptr`.
    pub(crate) fn unregister(&mut self, device: Handle, ptr: usize) -> Outcome {
        let index = self
            .registrations
            .iter()
            .position(|r| r.device == device && ptr >= r.base && ptr < r.base + r.size)
            .ok_or(ol_error!(
                Errc::InvalidArgument,
                "the pointer is in no range registered with this device"
            ))?;
        let registration = &mut self.registrations[index];
        registration.users -= 1;
        if registration.users == 0 {
            self.registrations.remove(index);
        }
        Ok(())
    }

    /// Keep a loaded program; its handle.
    pub(crate) fn add_program(&mut self, program: Program) -> Handle {
        let handle = program.handle;
        self.programs.push(program);
        handle
    }

    /// The program `handle` names, if it is loaded.
    pub(crate) fn program(&self, handle: Handle) -> Outcome<&Program> {
        self.programs
            .iter()
            .find(|p| p.handle == handle)
            .ok_or(ol_error!(
                Errc::InvalidArgument,
                "not a loaded program of this liboffload context"
            ))
    }

    /// Forget the program `handle`, for the caller to unload.
    pub(crate) fn take_program(&mut self, handle: Handle) -> Outcome<Program> {
        self.program(handle)?;
        let index = self
            .programs
            .iter()
            .position(|p| p.handle == handle)
            .expect("found above");
        Ok(self.programs.remove(index))
    }

    /// The symbol `handle` names, in a loaded program.
    pub(crate) fn symbol(&self, handle: Handle) -> Outcome<&Symbol> {
        self.programs
            .iter()
            .flat_map(|p| p.symbols.iter().map(|(_, s)| s))
            .find(|s| s.handle == handle)
            .ok_or(ol_error!(
                Errc::InvalidArgument,
                "not a symbol of a loaded program of this liboffload context"
            ))
    }

    /// The symbol `handle` names and its program's loaded image, which a
    /// launch holds while the kernel runs.
    pub(crate) fn symbol_and_program(&self, handle: Handle) -> Outcome<(Symbol, Arc<Loaded>)> {
        self.programs
            .iter()
            .find_map(|p| {
                let (_, symbol) = p.symbols.iter().find(|(_, s)| s.handle == handle)?;
                Some((*symbol, p.loaded.clone()))
            })
            .ok_or(ol_error!(
                Errc::InvalidArgument,
                "not a symbol of a loaded program of this liboffload context"
            ))
    }

    /// The live `olMemAlloc` block containing `address`, and its base.
    pub(crate) fn allocation_containing(&self, address: usize) -> Option<(usize, Allocation)> {
        let (&base, &allocation) = self.allocations.range(..=address).next_back()?;
        (address - base < allocation.size).then_some((base, allocation))
    }

    /// Whether `base..base+size` overlaps a recorded block: only the block
    /// that starts last before its end can (the blocks are disjoint), so
    /// one search.
    fn overlaps(&self, base: usize, size: usize) -> bool {
        let end = base.saturating_add(size.max(1));
        self.allocations
            .range(..end)
            .next_back()
            .is_some_and(|(&start, block)| start >= base || start + block.size > base)
    }
}

/// What [`OlState::record`] did with a block.
pub(crate) enum Recorded {
    /// Recorded: the program's now.
    Yes,
    /// Its range overlaps a recorded block's (two devices may hand out
    /// the same addresses): not recorded, the caller allocates again.
    Overlaps,
}

/// A session's liboffload state: no context until `olInit`.
#[derive(Default)]
pub(crate) struct OlState {
    context: Mutex<Option<Context>>,
    /// What the program left in the contexts released so far
    /// ([`Context::leaks`]), for the session's shutdown report, each with
    /// the process it was listed in ([`forks_seen`] then: a fork child
    /// does not report its parent's).
    leaks: Mutex<Vec<(u64, String)>>,
    /// Whether `context` is `Some`: written under its lock, read without
    /// it by every entry's first check (LLVM's "uninitialized").
    initialized: AtomicBool,
}

impl OlState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Context>> {
        self.context.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `olInit` was called more often than `olShutDown`. An entry
    /// racing the last `olShutDown` may pass this check; its use of the
    /// context ([`OlState::with`]) then fails as uninitialized.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// `olInit`: the first call makes the context over `runtime` (built
    /// outside the lock; a context another thread installed meanwhile
    /// wins, and this one is dropped).
    pub(crate) fn init(&self, runtime: &Runtime) {
        if let Some(context) = self.lock().as_mut() {
            context.refcount += 1;
            return;
        }
        let made = Context::new(runtime);
        let mut guard = self.lock();
        guard.get_or_insert(made).refcount += 1;
        self.initialized.store(true, Ordering::Release);
    }

    /// `olShutDown`: the last call releases the context and returns the
    /// programs still loaded and the `olMemAlloc` blocks the program did
    /// not free, for the caller to release outside the lock.
    pub(crate) fn shut_down(&self) -> Outcome<Option<Leftovers>> {
        let mut guard = self.lock();
        let context = guard.as_mut().ok_or(&UNINITIALIZED)?;
        context.refcount -= 1;
        if context.refcount > 0 {
            return Ok(None);
        }
        self.initialized.store(false, Ordering::Release);
        Ok(guard.take().map(|c| self.keep_leaks(c, false)))
    }

    /// `context`'s leaks kept for the report; what it leaves to release.
    fn keep_leaks(&self, context: Context, at_exit: bool) -> Leftovers {
        let leaks = context.leaks(at_exit);
        let generation = forks_seen();
        self.leaks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(leaks.into_iter().map(|l| (generation, l)));
        Leftovers::from(context)
    }

    /// What the program left in every context released so far (taken).
    pub(crate) fn take_leaks(&self) -> Vec<String> {
        let leaks = std::mem::take(&mut *self.leaks.lock().unwrap_or_else(|e| e.into_inner()));
        let this = forks_seen();
        leaks
            .into_iter()
            .filter_map(|(generation, leak)| (generation == this).then_some(leak))
            .collect()
    }

    /// Run `f` on the context, or fail as LLVM does before `olInit`.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Context) -> Outcome<T>) -> Outcome<T> {
        let mut guard = self.lock();
        let context = guard.as_mut().ok_or(&UNINITIALIZED)?;
        f(context)
    }

    /// Record a new block of the device `allocation.device`, unless its
    /// range overlaps a recorded one's. Fails if the device is not (or no
    /// longer) a handle of the context.
    pub(crate) fn record(&self, address: usize, allocation: Allocation) -> Outcome<Recorded> {
        self.with(|c| {
            c.device(allocation.device)?;
            if c.overlaps(address, allocation.size) {
                return Ok(Recorded::Overlaps);
            }
            c.allocations.insert(address, allocation);
            Ok(Recorded::Yes)
        })
    }

    /// Take the record of the block at `address` (its base).
    pub(crate) fn take(&self, address: usize) -> Outcome<Allocation> {
        self.with(|c| {
            c.allocations.remove(&address).ok_or(ol_error!(
                Errc::InvalidArgument,
                "address is not a known allocation"
            ))
        })
    }

    /// Put back the record of a block [`OlState::take`] took and the
    /// device did not free; false if the context is gone meanwhile.
    pub(crate) fn restore(&self, address: usize, allocation: Allocation) -> bool {
        self.with(|c| {
            c.allocations.insert(address, allocation);
            Ok(())
        })
        .is_ok()
    }

    /// The context, dropped at the session's end if the program never
    /// called its last `olShutDown`: what it leaves, for the caller.
    pub(crate) fn release_at_exit(&self) -> Option<Leftovers> {
        let mut guard = self.lock();
        self.initialized.store(false, Ordering::Release);
        guard.take().map(|c| self.keep_leaks(c, true))
    }
}

/// Free `blocks` (olMemAlloc's, no longer recorded): each on its device,
/// the host's with `free`. A device block is freed only if the device
/// still holds a live allocation of that size there: the program may have
/// freed it through the OpenMP API (`omp_target_free`) and the address
/// may since be another allocation's, which must not be freed for it.
/// Returns how many were not freed.
pub(crate) fn free_blocks(runtime: Option<&Runtime>, blocks: &[(usize, Allocation)]) -> usize {
    let mut failed = 0;
    for &(address, allocation) in blocks {
        let ptr = DevicePtr::from_raw(address as *mut c_void);
        match allocation.target {
            // SAFETY: `malloc`'s block, recorded once and no longer
            // recorded: freed exactly once, here.
            Target::Host => unsafe { libc::free(ptr.as_ptr()) },
            Target::Runtime(id) => {
                let device = runtime.and_then(|r| r.device(id).ok());
                // SAFETY: freed only if it is the device's live block of the
                // size olMemAlloc gave, no longer recorded here: the program
                // gave up its use (olMemFree, olShutDown or the process's
                // exit).
                let freed = device.map(|d| unsafe { d.free_sized(ptr, Some(allocation.size)) });
                if !matches!(freed, Some(Ok(()))) {
                    failed += 1;
                }
            }
        }
    }
    failed
}

/// The runtime's allocation kind for an `ol_alloc_type_t` (any other
/// value is managed memory, as LLVM 22 takes it).
pub(crate) fn alloc_kind(kind: u32) -> AllocKind {
    match kind {
        alloc_type::HOST => AllocKind::Host,
        alloc_type::DEVICE => AllocKind::Device,
        _ => AllocKind::Shared,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_overlaps_exactly_the_blocks_it_shares_a_byte_with() {
        let mut context = Context::empty();
        let block = |size| Allocation {
            target: Target::Host,
            device: 1,
            kind: alloc_type::DEVICE,
            size,
        };
        context.allocations.insert(100, block(50));
        context.allocations.insert(200, block(10));
        for (base, size, expected) in [
            (0, 100, false),
            (0, 101, true),
            (149, 1, true),
            (150, 50, false),
            (150, 51, true),
            (120, 10, true),
            (90, 200, true),
            (210, 5, false),
            (205, 1, true),
            (100, 0, true),
            (150, 0, false),
        ] {
            assert_eq!(
                context.overlaps(base, size),
                expected,
                "{base}+{size} against 100+50 and 200+10"
            );
        }
    }
}
