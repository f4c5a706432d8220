//! The session: one `omptarget::Runtime` plus the offload layer's
//! [`Registry`] of registered binaries. Every C entry point reaches the
//! runtime through a `&Session`; each method builds an [`Offload`] view
//! (three references, no allocation) and calls the method of the same name.
//! A `Fatal` from the offload layer ends the process as LLVM 14 does.

pub(crate) mod device_number;
pub(crate) mod host_env;
pub(crate) mod lifecycle;

use self::device_number::{fatal_if_unknown, Accepts};
use self::host_env::Libomp;
use omptarget::{Config, Runtime};
use omptarget_abi::{AllocKind, AsyncInfo, BinDesc, DeviceInfo};
use omptarget_openmp::{Fatal, Loc, MapArgs, Offload, Registry, TargetOffloadPolicy, TargetRegion};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// Which data operation a `__tgt_target_data_*` call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataOp {
    Begin,
    End,
    Update,
}

/// The teams configuration of a `__tgt_target_teams*` launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Teams {
    pub num_teams: i32,
    pub thread_limit: i32,
}

/// The outcome of preparing an interop object.
pub(crate) enum InteropInit {
    Ready,
    NotReady,
    Unsupported,
}

/// The offload registry, and the runtime with its plugins once a binary
/// registered. Plugins are loaded at the first registration, as LLVM 14
/// loads them (`LoadRTLs`): a program that never registers an offload
/// binary has no devices, and its session opens no library at all (so
/// creating it takes no lock of the dynamic loader's).
pub(crate) struct Session {
    registry: Registry,
    runtime: OnceLock<Runtime>,
    /// The last `__tgt_set_info_flag` flags, for plugins loaded after it
    /// (`None`: never called). Its lock orders a setter against the thread
    /// that builds the runtime ([`Session::runtime`]), so that each flag
    /// reaches every plugin: either the setter sees the runtime built, or
    /// the builder, once it has published the runtime, sees the flags.
    info_flags: Mutex<Option<u32>>,
    /// What `olInit` made (`crate::offload_api`), if it was called.
    offload_api: crate::offload_api::OlState,
    /// The session of the late calls after the close at exit
    /// ([`Session::closed`]).
    closed: bool,
}

/// `__tgt_rtl_set_info_flag` on each of `runtime`'s plugins.
fn set_plugins_info_flag(runtime: &Runtime, flags: u32) {
    for plugin in 0..runtime.plugin_count() {
        if let Some(p) = runtime.plugin(plugin) {
            p.set_info_flag(flags);
        }
    }
}

/// End the process for a fatal offload error, as LLVM's FATAL_MESSAGE does.
/// If the call failed because its kernel ended the thread, leave silently
/// instead: the boundary resumes the exit.
fn or_abort<T>(result: Result<T, Fatal>) -> T {
    if omptarget_thread_exit::is_pending() {
        crate::boundary::leave_for_thread_exit();
    }
    match result {
        Ok(value) => value,
        Err(fatal) => {
            // At exit, another thread's runtime call may fail because the
            // exit finalized its plugin: not an abort of the process.
            lifecycle::park_if_closed_by_another_thread();
            if lifecycle::deferred_call_after_close() {
                // A deferred call must end (libomp's finaliser waits for
                // it), but this one's caller has no value for a skipped
                // call: it parks, as before.
                lifecycle::park_until_exit()
            }
            fatal.abort_as(crate::caller::calling_release())
        }
    }
}

/// [`or_abort`] for a deferred call's status (`OMP_TGT_*`): when another
/// thread closed the runtime at exit under it, the call ends quietly with
/// `OMP_TGT_SUCCESS`, as a deferred call that starts after the close does
/// (`with_session_deferred`): the process is ending with the exiting
/// thread's status, and libomp's finaliser waits for this task.
fn or_abort_deferred(result: Result<i32, Fatal>) -> i32 {
    match result {
        Err(_) if lifecycle::deferred_call_after_close() => omptarget_abi::OMP_TGT_SUCCESS,
        result => or_abort(result),
    }
}

impl Session {
    /// An empty session: no plugin loaded yet.
    pub fn new() -> Self {
        let registry = Registry::with_ompt(&crate::ompt::OMPT);
        crate::info_level::configure(&registry);
        Session {
            registry,
            runtime: OnceLock::new(),
            info_flags: Mutex::new(None),
            offload_api: Default::default(),
            closed: false,
        }
    }

    /// The runtime, loading the plugins on first use. Called at the first
    /// registration (from a library constructor, which already holds the
    /// dynamic loader's lock that dlopen takes).
    fn runtime(&self) -> &Runtime {
        let mut built_here = false;
        let runtime = self.runtime.get_or_init(|| {
            built_here = true;
            // The plugin libraries next to libomptarget.so, the host one
            // built in (as LLVM 19+ build theirs in): the same backend
            // without a C entry on every call. OMPTARGET_PLUGINS naming
            // the plugins loads exactly those libraries.
            let mut config = Config::from_env();
            // Like LLVM: no plugin means host fallback, not an error.
            config.require_a_plugin = false;
            // LLVM 19+ load plugins even then (their devices are counted).
            if host_env::target_offload_policy() == TargetOffloadPolicy::Disabled
                && !crate::caller::calling_release().counts_devices_when_disabled()
            {
                // LLVM 14 loads no plugin at all when offloading is disabled;
                // in an MPI job the MPI plugin still joins it (no device of
                // it is used), so that its device servers are told to exit.
                // SAFETY: the MPI plugin library of this installation, in
                // a job that may hold servers (or none).
                config =
                    unsafe { config.with_plugins(omptarget::plugin::mpi_plugin_of_this_job()) };
            }
            let runtime = Runtime::new(config).unwrap_or_else(|err| {
                eprintln!("Libomptarget error: cannot load the offload plugins: {err}");
                // SAFETY: an empty list: no library is loaded.
                let mut none =
                    unsafe { Config::from_env().with_plugins(Vec::<std::path::PathBuf>::new()) };
                none.builtin_host = false;
                none.require_a_plugin = false;
                Runtime::new(none).expect("a runtime without plugins always builds")
            });
            // After the plugins registered theirs: the runtime's fork gate
            // must close before they take their own locks (prepare handlers
            // run in the reverse order of registration).
            lifecycle::register_fork_handler();
            runtime
        });
        if built_here {
            // Published: a flag set from now on finds the runtime itself;
            // one set before (even while it was being built) is given here,
            // holding the lock, so that a later setter's flags are applied
            // after these and are the ones the plugins keep.
            let flags = self.info_flags.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(flags) = *flags {
                set_plugins_info_flag(runtime, flags);
            }
        }
        // `__tgt_register_requires` flags stay in the registry: a device
        // gets them when it initialises (their one route to a plugin).
        runtime
    }

    /// The OpenMP layer over this session. Its platform is the runtime's
    /// cell, read at every use, never a snapshot: another thread's first
    /// registration may build the runtime and number its devices in the
    /// registry while this call runs, and a snapshot taken before ("no
    /// plugins") would then find no device behind a number the registry
    /// already gives (`omp_target_alloc` returned null, silently).
    fn offload(&self) -> Offload<'_> {
        Offload::new(&self.registry, &self.runtime, &Libomp)
    }

    /// The liboffload state (`crate::offload_api`).
    pub(crate) fn offload_api(&self) -> &crate::offload_api::OlState {
        &self.offload_api
    }

    /// The runtime, built now if no binary registered yet (`olInit`);
    /// `None` in the session of late calls after the close at exit
    /// ([`Session::closed`]), which loads no plugin.
    pub(crate) fn build_runtime(&self) -> Option<&Runtime> {
        (!self.closed).then(|| self.runtime())
    }

    /// The runtime, if it was built.
    pub(crate) fn built_runtime(&self) -> Option<&Runtime> {
        self.runtime.get()
    }

    /// The UID of the runtime's device `id`: the one
    /// `omp_get_uid_from_device` gives it (LLVM 22's form, the plugin's
    /// name and the device's number in it), without numbering devices in
    /// the registry (a process that uses only `ol*` registers no binary).
    pub(crate) fn device_uid(&self, id: usize) -> Option<String> {
        let device = self.runtime.get()?.device(id).ok()?;
        let local = usize::try_from(device.local_id()).ok()?;
        Some(omptarget_openmp::api_since_llvm22::device_uid(
            device.plugin_name(),
            local,
        ))
    }

    /// Tear down in the fixed order and emit the report (if plugins were
    /// ever loaded: otherwise there is nothing to tear down).
    pub fn shutdown(self) {
        // A liboffload context the program never shut down: its host
        // blocks are freed here; its blocks on the runtime's devices are
        // the devices' live allocations, which the runtime's shutdown
        // frees and lists as the program's leaks.
        // Its programs stay loaded: the runtime's teardown unloads them
        // with the OpenMP path's images.
        // Its queues' work that has not started is dropped (the process is
        // ending) and their idle workers are ended and joined before the
        // runtime goes; a worker still inside the program's code (a host
        // function) is left running, and reported.
        let mut workers_left = 0;
        if let Some(leftovers) = self.offload_api.release_at_exit() {
            workers_left = crate::offload_api::stop_at_exit(&leftovers.lanes);
            let host_blocks: Vec<_> = leftovers
                .blocks
                .into_iter()
                .filter(|(_, block)| block.target == crate::offload_api::context::Target::Host)
                .collect();
            crate::offload_api::context::free_blocks(None, &host_blocks);
        }
        // The devices' `device_finalize` before their teardown; then the
        // tool hears nothing more.
        self.offload().ompt_shutdown();
        self.offload().dump_mappings_at_exit();
        if let Some(runtime) = self.runtime.into_inner() {
            let mut report = runtime.shutdown();
            report
                .api_leaks
                .extend(
                    self.offload_api
                        .take_leaks()
                        .into_iter()
                        .map(|what| omptarget::ApiLeak {
                            api: "liboffload".into(),
                            what,
                        }),
                );
            if workers_left > 0 {
                report.not_freed.push(omptarget::shutdown_report::NotFreed {
                    device: None,
                    plugin: "libLLVMOffload.so.22.1".into(),
                    what: format!("{workers_left} ol* queue worker thread(s)"),
                    reason: "still running the program's code at exit (a host function, or a wait for one): left to the OS".into(),
                });
            }
            crate::report_sink::emit(&report);
        }
    }

    /// A session for the late calls of the thread that closed the
    /// lifecycle at exit (a library finalizer that offloads): no plugins,
    /// so regions run on the host and device numbers are invalid.
    pub fn closed() -> Self {
        Session {
            closed: true,
            ..Self::new()
        }
    }

    /// The teardown at exit while calls are still in flight (`why`):
    /// release only what no call can be using (the memory managers'
    /// cached blocks), report the rest as left to the OS, and keep the
    /// session itself allocated for the calls still using it.
    pub fn shutdown_in_use(&self, why: &str) {
        // The devices stay initialised (calls still use them): no
        // `device_finalize`, and no callback after this shutdown.
        self.registry.ompt().finalize();
        if let Some(runtime) = self.runtime.get() {
            crate::report_sink::emit(&runtime.release_unused_at_exit(why));
        }
    }

    /// Was `desc` registered (and not unregistered since)?
    pub fn is_registered(&self, desc: *const std::ffi::c_void) -> bool {
        self.registry.is_registered(desc as usize)
    }

    pub fn register_requires(&self, flags: i64) {
        or_abort(self.offload().register_requires(flags))
    }

    /// # Safety
    /// `desc` is valid until its `unregister_lib`.
    pub unsafe fn register_lib(&self, desc: *mut BinDesc) {
        // LLVM 19 and 22 connect to libomp's OMPT before loading plugins;
        // LLVM 14 has no OMPT.
        if !crate::ompt::tried()
            && crate::caller::calling_release() >= omptarget_openmp::Release::Llvm19
        {
            crate::ompt::connect_once();
        }
        self.runtime();
        // LLVM 19+ binaries carry their `requires` flags in their entries.
        // SAFETY: `desc` is valid (our caller's contract).
        or_abort(unsafe { self.offload().register_lib_requires(desc) });
        // SAFETY: `desc` stays valid until its `unregister_lib` (our
        // caller's contract, the callee's too).
        unsafe { self.offload().register_lib(desc) }
    }

    /// # Safety
    /// `desc` is null or the descriptor passed to `register_lib`, still
    /// valid.
    pub unsafe fn unregister_lib(&self, desc: *mut BinDesc) {
        // SAFETY: our caller's contract is the callee's.
        unsafe { self.offload().unregister_lib(desc) }
    }

    /// # Safety
    /// As [`Session::unregister_lib`]; no call can reach the session any more.
    pub unsafe fn unregister_lib_before_teardown(&self, desc: *mut BinDesc) {
        // SAFETY: our caller's contract is the callee's.
        unsafe { self.offload().unregister_lib_before_teardown(desc) }
    }

    /// `__tgt_init_all_rtls`: use every loaded plugin. Like LLVM 14's, it
    /// loads none: before the first registration there are none to use.
    /// (Loading here, outside a library constructor, could also deadlock
    /// with a constructor that holds the dynamic loader's lock.)
    pub fn init_all_rtls(&self) {
        self.offload().init_all_plugins()
    }

    /// `__tgt_target_data_{begin,end,update}*`, once the C entry made the
    /// typed `loc` and `args` (whose constructors carry the call's contract).
    /// `nowait`: a `_nowait` entry (run alike; LLVM 15+ name it in INFO).
    pub fn target_data(
        &self,
        op: DataOp,
        nowait: bool,
        loc: Loc<'_>,
        device_id: i64,
        args: &MapArgs<'_>,
    ) {
        let offload = self.offload();
        or_abort(match op {
            DataOp::Begin => offload.target_data_begin_as(loc, device_id, args, nowait),
            DataOp::End => offload.target_data_end_as(loc, device_id, args, nowait),
            DataOp::Update => offload.target_data_update_as(loc, device_id, args, nowait),
        })
    }

    /// `__tgt_target*` and `__tgt_target_kernel[_nowait]`, once the C entry
    /// bound the region's kernel to its arguments (`region`).
    pub fn target_kernel(&self, loc: Loc<'_>, device_id: i64, region: TargetRegion<'_, '_>) -> i32 {
        or_abort_deferred(self.offload().target_kernel(loc, device_id, region))
    }

    pub fn push_tripcount(&self, loc: Loc<'_>, device_id: i64, count: u64) {
        or_abort(self.offload().push_target_tripcount(loc, device_id, count))
    }

    pub fn num_devices(&self) -> c_int {
        self.offload().num_devices()
    }

    pub fn initial_device(&self) -> c_int {
        self.offload().initial_device()
    }

    pub fn target_alloc(&self, size: usize, device_num: c_int, kind: AllocKind) -> *mut c_void {
        let offload = self.offload();
        if size != 0 {
            // LLVM 19+: an unknown device is fatal here (LLVM 14: null).
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.target_alloc(size, device_num, kind)
    }

    /// `omp_get_mapped_ptr` (LLVM 19+; a negative device number is fatal).
    pub fn get_mapped_ptr(&self, ptr: *const c_void, device_num: c_int) -> *mut c_void {
        let offload = self.offload();
        if !ptr.is_null() && device_num < 0 {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.get_mapped_ptr(ptr, device_num)
    }

    /// `omp_get_uid_from_device` (LLVM 22): `omp_invalid_device` is null,
    /// any other number that is no device the caller's release's error.
    pub fn uid_from_device(&self, device_num: c_int) -> *const c_char {
        let offload = self.offload();
        if device_num != omptarget_openmp::api_since_llvm22::OMP_INVALID_DEVICE {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.uid_from_device(device_num)
    }

    /// `omp_get_device_from_uid` (LLVM 22).
    ///
    /// # Safety
    /// `uid` is null or a NUL-terminated string.
    pub unsafe fn device_from_uid(&self, uid: *const c_char) -> c_int {
        // SAFETY: our `# Safety` is the callee's.
        unsafe { self.offload().device_from_uid(uid) }
    }

    /// `omp_target_is_accessible` (LLVM 22): a number that is neither a
    /// device, the initial device nor -1 is the caller's release's error
    /// (for a non-null pointer, which LLVM 22 checks first).
    pub fn target_is_accessible(
        &self,
        ptr: *const c_void,
        size: usize,
        device_num: c_int,
    ) -> c_int {
        let offload = self.offload();
        if !ptr.is_null() && device_num != -1 {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        c_int::from(offload.target_is_accessible(ptr, size, device_num))
    }

    /// `llvm_omp_target_lock_mem` / `_unlock_mem` (LLVM 19+) on host
    /// devices: the pointer itself for a device (or, for LLVM 14's callers,
    /// the initial device); a number that is no device, the initial
    /// device's included, is the caller's release's error (LLVM 19/22 look
    /// it up as a device).
    pub fn lock_mem(&self, ptr: *mut c_void, device_num: c_int) -> *mut c_void {
        let offload = self.offload();
        fatal_if_unknown(&offload, device_num, Accepts::DevicesOnly);
        let known = device_num == offload.initial_device()
            || (0..offload.num_devices()).contains(&device_num);
        if known {
            ptr
        } else {
            std::ptr::null_mut()
        }
    }

    /// `omp_target_memset` (LLVM 19+).
    ///
    /// # Safety
    /// `ptr` names `len` bytes of memory of `device_num`.
    pub unsafe fn target_memset(
        &self,
        ptr: *mut c_void,
        byte: c_int,
        len: usize,
        device_num: c_int,
    ) -> *mut c_void {
        let offload = self.offload();
        // LLVM 19/22 launch their fill kernel on the device, a lookup.
        if !ptr.is_null() && len != 0 {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        // SAFETY: our caller's contract is the callee's.
        unsafe { offload.target_memset(ptr, byte, len, device_num) }
    }

    /// # Safety
    /// `ptr` came from `target_alloc` on `device_num` (checked by the
    /// runtime for devices; for the initial device it came from `malloc`).
    pub unsafe fn target_free(&self, ptr: *mut c_void, device_num: c_int) {
        let offload = self.offload();
        if !ptr.is_null() {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        // SAFETY: our caller's contract is the callee's.
        unsafe { offload.target_free(ptr, device_num) }
    }

    pub fn target_is_present(&self, ptr: *const c_void, device_num: c_int) -> c_int {
        let offload = self.offload();
        if !ptr.is_null() {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.target_is_present(ptr, device_num)
    }

    /// # Safety
    /// As `omp_target_memcpy` requires: `dst + dst_offset` and
    /// `src + src_offset` name `length` bytes of memory of their devices.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target_memcpy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        length: usize,
        dst_offset: usize,
        src_offset: usize,
        dst_device: c_int,
        src_device: c_int,
    ) -> c_int {
        let offload = self.offload();
        if device_number::memcpy_looks_up(dst, src, length) {
            fatal_if_unknown(&offload, src_device, Accepts::DevicesAndInitial);
            fatal_if_unknown(&offload, dst_device, Accepts::DevicesAndInitial);
        }
        // SAFETY: our caller's contract is the callee's.
        unsafe {
            offload.target_memcpy(
                dst, src, length, dst_offset, src_offset, dst_device, src_device,
            )
        }
    }

    /// # Safety
    /// As `omp_target_memcpy_rect` requires: the arrays of `rect` hold
    /// `num_dims` elements and describe memory of the respective devices.
    pub unsafe fn target_memcpy_rect(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        rect: &crate::rect::Rect,
        dst_device: c_int,
        src_device: c_int,
    ) -> c_int {
        let offload = self.offload();
        // SAFETY: our caller's contract: each array holds `num_dims`
        // elements.
        if unsafe {
            device_number::memcpy_rect_looks_up(
                dst,
                src,
                rect.element_size,
                rect.num_dims,
                rect.arrays(),
            )
        } {
            fatal_if_unknown(&offload, src_device, Accepts::DevicesAndInitial);
            fatal_if_unknown(&offload, dst_device, Accepts::DevicesAndInitial);
        }
        // SAFETY: our caller's contract is the callee's.
        unsafe {
            offload.target_memcpy_rect(
                dst,
                src,
                rect.element_size,
                rect.num_dims,
                rect.volume,
                rect.dst_offsets,
                rect.src_offsets,
                rect.dst_dimensions,
                rect.src_dimensions,
                dst_device,
                src_device,
            )
        }
    }

    pub fn target_associate_ptr(
        &self,
        host_ptr: *const c_void,
        device_ptr: *const c_void,
        size: usize,
        device_offset: usize,
        device_num: c_int,
    ) -> c_int {
        let offload = self.offload();
        // Past LLVM's "invalid arguments" test, the device is looked up.
        if !host_ptr.is_null() && !device_ptr.is_null() && size != 0 {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.target_associate_ptr(host_ptr, device_ptr, size, device_offset, device_num)
    }

    pub fn target_disassociate_ptr(&self, host_ptr: *const c_void, device_num: c_int) -> c_int {
        let offload = self.offload();
        if !host_ptr.is_null() {
            fatal_if_unknown(&offload, device_num, Accepts::DevicesAndInitial);
        }
        offload.target_disassociate_ptr(host_ptr, device_num)
    }

    /// `__tgt_set_info_flag`: the runtime's info level and every plugin's.
    /// Plugins loaded later get the flags when they load.
    pub fn set_info_flag(&self, flags: u32) {
        // Under the lock, so that concurrent setters leave the registry
        // and every plugin on the same, last flags.
        let mut last = self.info_flags.lock().unwrap_or_else(|e| e.into_inner());
        self.registry.set_info_level(flags);
        *last = Some(flags);
        if let Some(runtime) = self.runtime.get() {
            set_plugins_info_flag(runtime, flags);
        }
    }

    /// `__tgt_print_device_info`: true if the device's plugin printed it.
    pub fn print_device_info(&self, device_id: i64) -> bool {
        let offload = self.offload();
        if !offload.device_is_ready(device_id) {
            return false;
        }
        match self.device(device_id) {
            Some(dev) => dev.plugin().print_device_info(dev.local_id()),
            None => false,
        }
    }

    /// The runtime device behind an OpenMP device number.
    fn device(&self, device_id: i64) -> Option<&omptarget::Device> {
        let (plugin, local) = *self
            .registry
            .device_map()
            .get(usize::try_from(device_id).ok()?)?;
        self.runtime.get()?.plugin_device(plugin, local)
    }

    /// Prepare an interop object's device (and, for `targetsync`, queue)
    /// information through the plugin, as LLVM 14's `__tgt_interop_init`.
    pub fn interop_device_info(
        &self,
        device_id: i32,
        info: &mut DeviceInfo,
        err: &mut *const c_char,
        tasksync: bool,
        async_info: &mut *mut AsyncInfo,
    ) -> InteropInit {
        if !self.offload().device_is_ready(device_id as i64) {
            return InteropInit::NotReady;
        }
        let Some(dev) = self.device(device_id as i64) else {
            return InteropInit::NotReady;
        };
        let async_out = tasksync.then_some(async_info as *mut *mut AsyncInfo);
        // SAFETY: `info`, `err` and `async_info` come from `&mut` borrows,
        // so they are valid, writable and unaliased for the call, which is
        // all `init_interop_info` requires.
        match unsafe {
            dev.plugin()
                .init_interop_info(dev.local_id(), info, err, async_out)
        } {
            Some(true) => InteropInit::Ready,
            _ => InteropInit::Unsupported,
        }
    }
}
