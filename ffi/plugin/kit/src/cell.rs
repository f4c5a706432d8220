//! [`PluginCell`]: the plugin state behind a static, with its lifecycle.
//!
//! The cell is a `static` in the plugin cdylib (declared by
//! [`crate::export_plugin!`]). Rust never runs destructors of statics, and
//! everything the cell holds is created by `init_plugin` (or lazily) and
//! dropped by `deinit_plugin`, so unloading the library runs no teardown code
//! except the [`crate::safety_net`].

use crate::backend::{Backend, DeviceId, InitCause};
use crate::diagnostics;
use crate::error::{PluginError, Result};
use crate::state_lock::{thread_id, ReadGuard, ReadMostly};
use omptarget_abi::info_type;
use omptarget_abi::plugin::DestructionCallback;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::Duration;

/// How long `__tgt_rtl_deinit_plugin` waits for the calls inside the
/// plugin to leave before it gives up and keeps the state. LLVM's runtimes
/// call it at exit, where another thread may still be in a kernel.
const DEINIT_WAIT: Duration = Duration::from_secs(2);

/// Where the plugin is in its lifecycle.
enum Lifecycle<B> {
    /// Never initialised: the first entry initialises lazily.
    Fresh,
    /// Initialised.
    Live(Live<B>),
    /// Deinitialised, or an initialisation failed: entries fail until
    /// `init_plugin` succeeds.
    Down,
}

/// The state of an initialised plugin: the backend and its devices.
pub struct Live<B> {
    backend: B,
    devices: Box<[DeviceSlot]>,
}

/// Per-device bookkeeping the entry layer keeps for every backend.
struct DeviceSlot {
    initialised: AtomicBool,
    /// Serialises init_device / deinit_device of this device.
    transition: Mutex<()>,
}

/// The plugin state of one cdylib (or of one built-in instance). See the
/// module docs. `K` is how its entries are called ([`crate::boundary`]):
/// through C entries (the default), or natively from a runtime in the same
/// binary.
pub struct PluginCell<B, K = crate::boundary::CEntry> {
    /// Read by every entry, written by init and deinit. Not std's `RwLock`,
    /// whose one reader count every call of every thread writes: readers
    /// count themselves per thread ([`ReadMostly`]).
    state: ReadMostly<Lifecycle<B>>,
    /// Mirrors "state is Live" without the lock, for the safety net.
    live: AtomicBool,
    /// The registered destruction callback as an address (0: none).
    destruction_cb: AtomicUsize,
    destruction_data: AtomicPtr<c_void>,
    /// The plugin's own info level, as an LLVM 14 plugin keeps one: read
    /// from `LIBOMPTARGET_INFO` at first use (`info_env`), then replaced by
    /// `__tgt_rtl_set_info_flag`.
    info_flags: AtomicU32,
    info_env: Once,
    /// `pthread_atfork` prepare and release handlers of this cell
    /// ([`crate::fork`]); `None` for a cell that is not a plugin's static.
    fork_handlers: Option<(extern "C" fn(), extern "C" fn())>,
    fork_handlers_registered: AtomicBool,
    /// The cell is a plugin library's static (it has its own copy of std),
    /// so it installs the quiet panic hook
    /// ([`diagnostics::install_panic_hook`]). A plugin built into a program
    /// shares the program's std, whose panic hook is the program's.
    own_library: bool,
    /// `fn() -> K`: the kind is a type only; the cell is `Send`/`Sync`
    /// whatever it is.
    boundary: PhantomData<fn() -> K>,
}

/// What a fork's prepare handler holds: the backend's locks, then (dropped
/// last) the state they borrow from.
struct HeldForFork<B: 'static> {
    _locks: crate::fork_locks::ForkLocks<'static>,
    _state: ReadGuard<'static, Lifecycle<B>>,
}

impl<B: Backend, K> Default for PluginCell<B, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend, K> PluginCell<B, K> {
    /// An uninitialised cell (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            state: ReadMostly::new(Lifecycle::Fresh),
            live: AtomicBool::new(false),
            destruction_cb: AtomicUsize::new(0),
            destruction_data: AtomicPtr::new(std::ptr::null_mut()),
            info_flags: AtomicU32::new(0),
            info_env: Once::new(),
            fork_handlers: None,
            fork_handlers_registered: AtomicBool::new(false),
            own_library: false,
            boundary: PhantomData,
        }
    }

    /// A plugin's static cell, with the `pthread_atfork` handlers (prepare,
    /// then release for both parent and child) that [`crate::export_plugin!`]
    /// defines for it; registered when the plugin is first initialised.
    pub const fn with_fork_handlers(prepare: extern "C" fn(), release: extern "C" fn()) -> Self {
        let mut cell = Self::new();
        cell.fork_handlers = Some((prepare, release));
        cell.own_library = true;
        cell
    }

    /// The state became live: mark it, and register the fork handlers once.
    fn became_live(&self) {
        self.live.store(true, Ordering::Release);
        let Some((prepare, release)) = self.fork_handlers else {
            return;
        };
        if self.fork_handlers_registered.swap(true, Ordering::AcqRel) {
            return;
        }
        // SAFETY: the handlers are plain functions of this library; glibc
        // forgets them when it is unloaded.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
        if rc != 0 {
            diagnostics::debug(B::NAME, &format_args!("pthread_atfork failed ({rc})"));
        }
    }

    /// For [`crate::fork::prepare`]: the state (read) and the backend's
    /// fork locks, held until dropped.
    pub(crate) fn hold_for_fork(&'static self) -> impl crate::fork_locks::HeldAcrossFork {
        let state = self.state.read(thread_id());
        let locks = match &*state {
            Lifecycle::Live(live) => {
                let locks = live.backend.lock_for_fork();
                // SAFETY: the guards borrow the backend inside `state`; they
                // are stored with the read guard and dropped before it, and
                // the backend cannot be dropped (deinit needs the write lock)
                // while the read guard is held.
                unsafe {
                    std::mem::transmute::<
                        crate::fork_locks::ForkLocks<'_>,
                        crate::fork_locks::ForkLocks<'static>,
                    >(locks)
                }
            }
            Lifecycle::Fresh | Lifecycle::Down => Vec::new(),
        };
        HeldForFork {
            _locks: locks,
            _state: state,
        }
    }

    /// Whether the plugin is initialised (lock-free; for the safety net).
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// `__tgt_rtl_init_plugin`: create the state; a no-op when it exists.
    pub(crate) fn init_explicit(&self) -> Result<()> {
        // Already live: say so without the write, which would wait for
        // every call in flight (a kernel on another thread).
        if matches!(*self.state.read(thread_id()), Lifecycle::Live(_)) {
            diagnostics::debug(B::NAME, &"init_plugin: already initialised");
            return Ok(());
        }
        let mut state = self.state.write();
        if matches!(*state, Lifecycle::Live(_)) {
            diagnostics::debug(B::NAME, &"init_plugin: already initialised");
            return Ok(());
        }
        match Live::create(InitCause::Explicit, self.own_library) {
            Ok(live) => {
                *state = Lifecycle::Live(live);
                self.became_live();
                Ok(())
            }
            Err(e) => {
                *state = Lifecycle::Down;
                Err(e)
            }
        }
    }

    /// `__tgt_rtl_deinit_plugin`: drop the state through [`Backend::deinit`].
    pub(crate) fn deinit(&self) -> Result<()> {
        // Bounded: a kernel that never ends (or one that called back into
        // the plugin on this thread) would make the write wait forever, and
        // with it every later call of every thread.
        let mut state =
            self.state
                .try_write_for(DEINIT_WAIT)
                .map_err(|still| PluginError::InUse {
                    readers: still.readers,
                    waited_ms: DEINIT_WAIT.as_millis(),
                })?;
        match std::mem::replace(&mut *state, Lifecycle::Down) {
            Lifecycle::Live(live) => {
                self.live.store(false, Ordering::Release);
                live.backend.deinit()
            }
            other => {
                *state = other;
                Err(PluginError::NotInitialised)
            }
        }
    }

    /// Run `f` on the live state, initialising lazily if no entry did yet.
    pub(crate) fn with_live<R>(&self, f: impl FnOnce(&Live<B>) -> Result<R>) -> Result<R> {
        loop {
            {
                let state = self.state.read(thread_id());
                match &*state {
                    Lifecycle::Live(live) => return f(live),
                    Lifecycle::Down => return Err(PluginError::NotInitialised),
                    Lifecycle::Fresh => {}
                }
            }
            let mut state = self.state.write();
            if matches!(*state, Lifecycle::Fresh) {
                diagnostics::debug(
                    B::NAME,
                    &"initialising lazily (no __tgt_rtl_init_plugin call)",
                );
                match Live::create(InitCause::Lazy, self.own_library) {
                    Ok(live) => {
                        *state = Lifecycle::Live(live);
                        self.became_live();
                    }
                    Err(e) => {
                        *state = Lifecycle::Down;
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Remember the runtime's destruction callback (`None` clears it).
    pub(crate) fn set_destruction_cb(&self, cb: Option<DestructionCallback>, data: *mut c_void) {
        // Data first, callback last: a reader that sees the callback sees
        // its data.
        self.destruction_data.store(data, Ordering::Release);
        self.destruction_cb
            .store(cb.map_or(0, |cb| cb as usize), Ordering::Release);
    }

    /// The registered destruction callback and its data, if any.
    pub fn destruction_cb(&self) -> Option<(DestructionCallback, *mut c_void)> {
        let cb = self.destruction_cb.load(Ordering::Acquire);
        if cb == 0 {
            return None;
        }
        // SAFETY: a non-zero value was stored from a `DestructionCallback`
        // in `set_destruction_cb`.
        let cb = unsafe { std::mem::transmute::<usize, DestructionCallback>(cb) };
        Some((cb, self.destruction_data.load(Ordering::Acquire)))
    }

    /// Read `LIBOMPTARGET_INFO` once. Also before a store by
    /// `__tgt_rtl_set_info_flag`, so that the environment never overrides
    /// it later. The closure cannot panic (junk parses as 0), so `info_env`
    /// is never poisoned.
    fn read_info_env(&self) {
        self.info_env.call_once(|| {
            if let Some(value) = std::env::var_os("LIBOMPTARGET_INFO") {
                let level = info_type::parse_level(value.to_string_lossy().as_bytes());
                self.info_flags.store(level, Ordering::Relaxed);
            }
        });
    }

    /// `__tgt_rtl_set_info_flag`.
    pub(crate) fn set_info_flags(&self, flags: u32) {
        self.read_info_env();
        self.info_flags.store(flags, Ordering::Relaxed);
    }

    /// The info level: `LIBOMPTARGET_INFO`, or the last flags given to
    /// `__tgt_rtl_set_info_flag`.
    pub fn info_flags(&self) -> u32 {
        self.read_info_env();
        self.info_flags.load(Ordering::Relaxed)
    }
}

impl<B: Backend> Live<B> {
    fn create(cause: InitCause, own_library: bool) -> Result<Self> {
        if own_library {
            diagnostics::install_panic_hook::<B>();
        }
        let backend = B::init(cause)?;
        let count = backend.number_of_devices();
        if i32::try_from(count).is_err() {
            let message = format!("backend reports {count} devices, more than an i32 holds");
            // The backend was created: give it back its resources.
            let _ = backend.deinit();
            return Err(PluginError::backend(message));
        }
        let devices = (0..count)
            .map(|_| DeviceSlot {
                initialised: AtomicBool::new(false),
                transition: Mutex::new(()),
            })
            .collect();
        Ok(Self { backend, devices })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Number of devices (fits an `i32`, checked at creation).
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// The count `__tgt_rtl_number_of_devices` reports (see
    /// [`Backend::reported_device_count`]).
    pub fn reported_device_count(&self) -> i32 {
        i32::try_from(self.backend.reported_device_count()).unwrap_or(i32::MAX)
    }

    /// Check that `id` names a device.
    pub fn device(&self, id: i32) -> Result<DeviceId> {
        usize::try_from(id)
            .ok()
            .filter(|&i| i < self.devices.len())
            .map(DeviceId::new)
            .ok_or(PluginError::DeviceOutOfRange {
                id,
                count: self.devices.len(),
            })
    }

    /// Check that `id` names a device that is initialised.
    pub fn initialised_device(&self, id: i32) -> Result<DeviceId> {
        let device = self.device(id)?;
        if self.devices[device.index()]
            .initialised
            .load(Ordering::Acquire)
        {
            Ok(device)
        } else {
            Err(PluginError::DeviceNotInitialised(device.index()))
        }
    }

    /// `__tgt_rtl_init_device`; initialising twice is a no-op.
    pub(crate) fn init_device(&self, id: i32) -> Result<()> {
        let device = self.device(id)?;
        let slot = &self.devices[device.index()];
        let _transition = slot
            .transition
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if slot.initialised.load(Ordering::Acquire) {
            diagnostics::debug(
                B::NAME,
                &format_args!("device {device} already initialised"),
            );
            return Ok(());
        }
        self.backend.init_device(device)?;
        slot.initialised.store(true, Ordering::Release);
        Ok(())
    }

    /// `__tgt_rtl_deinit_device`; the device must be initialised. It stays
    /// initialised if the backend fails.
    pub(crate) fn deinit_device(&self, id: i32) -> Result<()> {
        let device = self.initialised_device(id)?;
        let slot = &self.devices[device.index()];
        let _transition = slot
            .transition
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !slot.initialised.load(Ordering::Acquire) {
            return Err(PluginError::DeviceNotInitialised(device.index()));
        }
        self.backend.deinit_device(device)?;
        slot.initialised.store(false, Ordering::Release);
        Ok(())
    }
}
