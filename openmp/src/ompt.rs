//! OMPT device tracing, as LLVM 19's and 22's libomptarget emit it
//! (`offload/src/OpenMP/OMPT` there): the tool's target callbacks
//! (`target`, `target_data_op`, `target_submit` and their EMI forms) and
//! the device callbacks (`device_initialize`, `device_load`,
//! `device_finalize`), which LLVM's plugins emit and we emit around our
//! plugins' calls.
//!
//! * [`Ompt`]: the callbacks the tool registered with libomp, bound once
//!   when the shim connects to libomp (`ompt_libomp_connect`), and whether
//!   tracing is on. The shim keeps it in a static of plain atomics (libomp
//!   calls the finalizer from its own destructor, possibly after our
//!   session is gone); the [`super::Registry`] refers to it.
//! * The per-thread state LLVM keeps in its thread-local `Interface`: the
//!   current region's `target_data`, the operation's `host_op_id` (the EMI
//!   callbacks get pointers to both, so they live in this thread's storage
//!   for the thread's life), the task data libomp gives for the region,
//!   and the calling code's return address (`codeptr_ra`).
//! * A call traces only when its caller's release has OMPT (LLVM 14's
//!   runtime has none); `Offload::ompt_call` asks once per C call, and
//!   only while a tool listens.
//!
//! The disabled path is one relaxed load of [`Ompt::active`] per
//! operation. Nothing here has a destructor: no exit-time code.

use super::{DeviceCtx, Offload, OpFailed, Release};
use omptarget::abi::AllocKind;
use omptarget::device::DevicePtr;
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// `ompt_function_lookup_t`: a runtime entry point by name.
pub type Lookup = unsafe extern "C" fn(*const c_char) -> *mut c_void;
/// `ompt_get_callback_t`.
type GetCallback = unsafe extern "C" fn(c_int, *mut *mut c_void) -> c_int;
/// libomp's `ompt_get_task_data` / `ompt_get_target_task_data`.
type GetData = unsafe extern "C" fn() -> *mut u64;

type DeviceInitialize =
    unsafe extern "C" fn(c_int, *const c_char, *mut c_void, Option<Lookup>, *const c_char);
type DeviceFinalize = unsafe extern "C" fn(c_int);
type DeviceLoad = unsafe extern "C" fn(
    c_int,
    *const c_char,
    i64,
    *mut c_void,
    usize,
    *mut c_void,
    *mut c_void,
    u64,
);
type Target = unsafe extern "C" fn(c_int, c_int, c_int, *mut u64, u64, *const c_void);
type TargetDataOp = unsafe extern "C" fn(
    u64,
    u64,
    c_int,
    *mut c_void,
    c_int,
    *mut c_void,
    c_int,
    usize,
    *const c_void,
);
type TargetSubmit = unsafe extern "C" fn(u64, u64, c_uint);
type TargetEmi =
    unsafe extern "C" fn(c_int, c_int, c_int, *mut u64, *mut u64, *mut u64, *const c_void);
type TargetDataOpEmi = unsafe extern "C" fn(
    c_int,
    *mut u64,
    *mut u64,
    *mut u64,
    c_int,
    *mut c_void,
    c_int,
    *mut c_void,
    c_int,
    usize,
    *const c_void,
);
type TargetSubmitEmi = unsafe extern "C" fn(c_int, *mut u64, *mut u64, c_uint);

/// The callbacks LLVM binds, with their `ompt_callbacks_t` codes.
#[derive(Clone, Copy)]
enum Event {
    Target = 0,
    DataOp,
    Submit,
    DeviceInitialize,
    DeviceFinalize,
    DeviceLoad,
    TargetEmi,
    DataOpEmi,
    SubmitEmi,
}
const EVENTS: [(Event, c_int); 9] = [
    (Event::Target, 8),
    (Event::DataOp, 9),
    (Event::Submit, 10),
    (Event::DeviceInitialize, 12),
    (Event::DeviceFinalize, 13),
    (Event::DeviceLoad, 14),
    (Event::TargetEmi, 33),
    (Event::DataOpEmi, 34),
    (Event::SubmitEmi, 35),
];

/// `ompt_scope_endpoint_t`.
const BEGIN: c_int = 1;
const END: c_int = 2;

/// `ompt_target_t`: the kind of a traced construct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    /// `target` (also `nowait`: LLVM reports both as `ompt_target`).
    Target = 1,
    /// `target enter data` and the start of `target data`.
    EnterData = 2,
    /// `target exit data` and the end of `target data`.
    ExitData = 3,
    /// `target update`.
    Update = 4,
}

/// `ompt_target_data_op_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataOpKind {
    /// A device allocation.
    Alloc = 1,
    /// Host to device.
    ToDevice = 2,
    /// Device to host (and device to device: LLVM has no better kind).
    FromDevice = 3,
    /// A device free.
    Delete = 4,
    /// `omp_target_associate_ptr`.
    Associate = 5,
    /// `omp_target_disassociate_ptr`.
    Disassociate = 6,
}

/// The tool's callbacks as libomp handed them over, and whether tracing
/// is on. All plain atomics: safe to read and write at any point of the
/// process's life, exit included.
#[derive(Debug)]
pub struct Ompt {
    /// Connected, some callback bound, neither the tool nor our shutdown
    /// finalized it: the one load the disabled path makes.
    active: AtomicBool,
    /// Finalized for good (the tool's finalize or our shutdown).
    finished: AtomicBool,
    callbacks: [AtomicUsize; EVENTS.len()],
    /// libomp's lookup, passed on to `device_initialize` as LLVM does.
    lookup: AtomicUsize,
    get_task_data: AtomicUsize,
    get_target_task_data: AtomicUsize,
    /// LLVM's correlation ids: one counter for regions and operations.
    next_id: AtomicU64,
}

impl Default for Ompt {
    fn default() -> Self {
        Self::new()
    }
}

impl Ompt {
    /// Not connected: nothing is traced.
    pub const fn new() -> Ompt {
        Ompt {
            active: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            callbacks: [const { AtomicUsize::new(0) }; EVENTS.len()],
            lookup: AtomicUsize::new(0),
            get_task_data: AtomicUsize::new(0),
            get_target_task_data: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
        }
    }

    /// Is a tool listening? (One relaxed load: the cost of the disabled
    /// path.)
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// LLVM's `initializeLibrary` and the binding after `connect`: take the
    /// tool's callbacks through libomp's `lookup` (`ompt_get_callback` by
    /// event code) and the task data entries. Tracing starts if the tool
    /// registered any callback LLVM emits.
    ///
    /// # Safety
    /// `lookup` is libomp's `ompt_function_lookup_t` given to a connected
    /// library: its answers for `ompt_get_callback`, `ompt_get_task_data`
    /// and `ompt_get_target_task_data` have those entries' C types.
    pub unsafe fn bind(&self, lookup: Lookup) {
        if self.finished.load(Relaxed) {
            return;
        }
        // SAFETY: our `# Safety`: `lookup` takes a NUL-terminated name.
        let find = |name: &std::ffi::CStr| unsafe { lookup(name.as_ptr()) } as usize;
        let get_callback = find(c"ompt_get_callback");
        self.get_task_data
            .store(find(c"ompt_get_task_data"), Relaxed);
        self.get_target_task_data
            .store(find(c"ompt_get_target_task_data"), Relaxed);
        self.lookup.store(lookup as usize, Relaxed);
        if get_callback == 0 {
            return;
        }
        // SAFETY: our `# Safety`: `ompt_get_callback`'s C type.
        let get_callback: GetCallback = unsafe { std::mem::transmute(get_callback) };
        let mut any = false;
        for (event, code) in EVENTS {
            let mut found: *mut c_void = std::ptr::null_mut();
            // SAFETY: libomp writes the callback to `found` if registered.
            if unsafe { get_callback(code, &mut found) } == 1 && !found.is_null() {
                self.callbacks[event as usize].store(found as usize, Relaxed);
                any = true;
            }
        }
        self.active.store(any, Relaxed);
    }

    /// LLVM's `finalizeLibrary` (libomp calls it at its exit), and our
    /// shutdown: no callback is made after this, ever.
    pub fn finalize(&self) {
        self.finished.store(true, Relaxed);
        self.active.store(false, Relaxed);
    }

    fn callback(&self, event: Event) -> usize {
        if !self.active() {
            return 0;
        }
        self.callbacks[event as usize].load(Relaxed)
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed)
    }

    /// Does the tool want device events (init, load, finalize)? Devices are
    /// then set up as LLVM 19 sets them up (see `eager_device_init`).
    pub fn traces_devices(&self) -> bool {
        self.active()
    }
}

/// LLVM's thread-local `Interface` and `ReturnAddress`, and the call's
/// tracing state.
struct ThreadState {
    /// The region's `ompt_data_t` (the EMI callbacks write it).
    target_data: UnsafeCell<u64>,
    /// The operation's id (the EMI callbacks write it).
    host_op_id: UnsafeCell<u64>,
    task_data: Cell<*mut u64>,
    target_task_data: Cell<*mut u64>,
    /// `codeptr_ra`: the return address of the outermost C call.
    code: Cell<usize>,
    /// C calls this thread is inside while tracing (nested calls keep the
    /// outermost one's return address, as LLVM's setter does).
    depth: Cell<u32>,
    /// The outermost call's binary has OMPT (LLVM 19 or later).
    traced: Cell<bool>,
    /// Inside a traced `target` region (its kernel launch is a submit).
    in_region: Cell<bool>,
}

thread_local! {
    // Constant-initialised plain data: no destructor is registered.
    static THREAD: ThreadState = const {
        ThreadState {
            target_data: UnsafeCell::new(0),
            host_op_id: UnsafeCell::new(0),
            task_data: Cell::new(std::ptr::null_mut()),
            target_task_data: Cell::new(std::ptr::null_mut()),
            code: Cell::new(0),
            depth: Cell::new(0),
            traced: Cell::new(false),
            in_region: Cell::new(false),
        }
    };
}

/// Where a C call came from: its return address and its binary's release.
#[derive(Debug, Clone, Copy)]
pub struct CallSite {
    /// `__builtin_return_address(0)` of the C export (0: unknown).
    pub return_address: usize,
    /// The release of the binary making the call.
    pub release: Release,
}

/// One C call's tracing scope ([`Offload::ompt_call`]).
#[must_use]
pub(crate) struct CallScope(bool);

impl Drop for CallScope {
    fn drop(&mut self) {
        if self.0 {
            THREAD.with(|t| {
                let depth = t.depth.get() - 1;
                t.depth.set(depth);
                if depth == 0 {
                    t.code.set(0);
                    t.traced.set(false);
                }
            });
        }
    }
}

/// A traced call's emitter: the callbacks and this thread's state.
#[derive(Clone, Copy)]
pub(crate) struct Tracer<'a> {
    ompt: &'a Ompt,
}

/// A data operation's arguments as the tool sees them.
#[derive(Clone, Copy)]
pub(crate) struct DataOp {
    pub kind: DataOpKind,
    pub src: usize,
    pub src_device: i32,
    pub dst: usize,
    pub dst_device: i32,
    pub bytes: usize,
}

impl Tracer<'_> {
    fn code(&self) -> *const c_void {
        THREAD.with(|t| t.code.get()) as *const c_void
    }

    /// LLVM's `beginTarget*` for `kind` (its `beginTargetRegion` first).
    pub(crate) fn region_begin(&self, kind: RegionKind, device: i32) {
        let get = |f: &AtomicUsize| match f.load(Relaxed) {
            0 => std::ptr::null_mut(),
            // SAFETY: libomp's `ompt_get_task_data`-style entry, no arguments.
            f => unsafe { std::mem::transmute::<usize, GetData>(f)() },
        };
        let (task, target_task) = (
            get(&self.ompt.get_task_data),
            get(&self.ompt.get_target_task_data),
        );
        let code = self.code();
        THREAD.with(|t| {
            t.task_data.set(task);
            t.target_task_data.set(target_task);
            t.in_region.set(kind == RegionKind::Target);
            let target_data = t.target_data.get();
            // SAFETY: this thread's own cell; no reference to it is live.
            unsafe { *target_data = 0 };
            match self.ompt.callback(Event::TargetEmi) {
                0 => {}
                f => {
                    // SAFETY: the tool's `ompt_callback_target_emi_t`.
                    let f: TargetEmi = unsafe { std::mem::transmute(f) };
                    // SAFETY: pointers to this thread's cells, valid for the
                    // thread's life; libomp's task data pointers as it gave them.
                    unsafe {
                        f(
                            kind as c_int,
                            BEGIN,
                            device,
                            task,
                            target_task,
                            target_data,
                            code,
                        )
                    };
                    return;
                }
            }
            if let f @ 1.. = self.ompt.callback(Event::Target) {
                // LLVM 19 and 22 give `target enter data` no id (their
                // `beginTargetDataEnter` does not create one).
                if kind != RegionKind::EnterData {
                    // SAFETY: as above.
                    unsafe { *target_data = self.ompt.new_id() };
                }
                // SAFETY: the tool's `ompt_callback_target_t`.
                let f: Target = unsafe { std::mem::transmute(f) };
                // SAFETY: as above.
                unsafe { f(kind as c_int, BEGIN, device, task, *target_data, code) };
            }
        });
    }

    /// LLVM's `endTarget*` (then its `endTargetRegion`).
    pub(crate) fn region_end(&self, kind: RegionKind, device: i32) {
        let code = self.code();
        THREAD.with(|t| {
            let (task, target_task, target_data) = (
                t.task_data.get(),
                t.target_task_data.get(),
                t.target_data.get(),
            );
            if let f @ 1.. = self.ompt.callback(Event::TargetEmi) {
                // SAFETY: the tool's `ompt_callback_target_emi_t`.
                let f: TargetEmi = unsafe { std::mem::transmute(f) };
                // SAFETY: as in `region_begin`.
                unsafe {
                    f(
                        kind as c_int,
                        END,
                        device,
                        task,
                        target_task,
                        target_data,
                        code,
                    )
                };
            } else if let f @ 1.. = self.ompt.callback(Event::Target) {
                // SAFETY: the tool's `ompt_callback_target_t`.
                let f: Target = unsafe { std::mem::transmute(f) };
                // SAFETY: as in `region_begin`.
                unsafe { f(kind as c_int, END, device, task, *target_data, code) };
            }
            t.task_data.set(std::ptr::null_mut());
            t.target_task_data.set(std::ptr::null_mut());
            t.in_region.set(false);
            // SAFETY: this thread's own cell; no reference to it is live.
            unsafe { *target_data = 0 };
        });
    }

    /// One endpoint of a data operation: the EMI callback at both, the
    /// plain one (with a new id) at the beginning only.
    pub(crate) fn data_op(&self, endpoint: c_int, op: &DataOp) {
        let code = self.code();
        THREAD.with(|t| {
            let (target_data, host_op_id) = (t.target_data.get(), t.host_op_id.get());
            let (src, dst) = (op.src as *mut c_void, op.dst as *mut c_void);
            if let f @ 1.. = self.ompt.callback(Event::DataOpEmi) {
                // SAFETY: the tool's `ompt_callback_target_data_op_emi_t`.
                let f: TargetDataOpEmi = unsafe { std::mem::transmute(f) };
                // SAFETY: this thread's cells and libomp's task data.
                unsafe {
                    f(
                        endpoint,
                        t.target_task_data.get(),
                        target_data,
                        host_op_id,
                        op.kind as c_int,
                        src,
                        op.src_device,
                        dst,
                        op.dst_device,
                        op.bytes,
                        code,
                    )
                };
            } else if endpoint == BEGIN {
                if let f @ 1.. = self.ompt.callback(Event::DataOp) {
                    let id = self.ompt.new_id();
                    // SAFETY: this thread's own cells; no reference is live.
                    let target_id = unsafe {
                        *host_op_id = id;
                        *target_data
                    };
                    // SAFETY: the tool's `ompt_callback_target_data_op_t`.
                    let f: TargetDataOp = unsafe { std::mem::transmute(f) };
                    // SAFETY: plain values.
                    unsafe {
                        f(
                            target_id,
                            id,
                            op.kind as c_int,
                            src,
                            op.src_device,
                            dst,
                            op.dst_device,
                            op.bytes,
                            code,
                        )
                    };
                }
            }
        });
    }

    /// A kernel launch inside a traced `target` region: `run` between
    /// the submit callbacks (LLVM's `beginTargetSubmit`/`endTargetSubmit`).
    pub(crate) fn submit<R>(&self, num_teams: u32, run: impl FnOnce() -> R) -> R {
        if !THREAD.with(|t| t.in_region.get()) {
            return run();
        }
        self.submit_endpoint(BEGIN, num_teams);
        let result = run();
        self.submit_endpoint(END, num_teams);
        result
    }

    fn submit_endpoint(&self, endpoint: c_int, num_teams: u32) {
        THREAD.with(|t| {
            let (target_data, host_op_id) = (t.target_data.get(), t.host_op_id.get());
            if let f @ 1.. = self.ompt.callback(Event::SubmitEmi) {
                // SAFETY: the tool's `ompt_callback_target_submit_emi_t`.
                let f: TargetSubmitEmi = unsafe { std::mem::transmute(f) };
                // SAFETY: this thread's own cells.
                unsafe { f(endpoint, target_data, host_op_id, num_teams) };
            } else if endpoint == BEGIN {
                if let f @ 1.. = self.ompt.callback(Event::Submit) {
                    let id = self.ompt.new_id();
                    // SAFETY: this thread's own cells; no reference is live.
                    let target_id = unsafe {
                        *host_op_id = id;
                        *target_data
                    };
                    // SAFETY: the tool's `ompt_callback_target_submit_t`.
                    let f: TargetSubmit = unsafe { std::mem::transmute(f) };
                    // SAFETY: plain values.
                    unsafe { f(target_id, id, num_teams) };
                }
            }
        });
    }
}

impl<'a> Offload<'a> {
    /// Enter a C call that LLVM traces (it sets its `ReturnAddress` there):
    /// while a tool listens, the outermost call finds its return address
    /// and its binary's release (one stack walk); otherwise one load.
    pub(crate) fn ompt_call(&self) -> CallScope {
        if !self.registry.ompt().active() {
            return CallScope(false);
        }
        THREAD.with(|t| {
            if t.depth.get() == 0 {
                let site = self.host.call_site();
                // Tools assert a non-null `codeptr_ra`.
                t.code.set(site.return_address.max(1));
                t.traced.set(site.release >= Release::Llvm19);
            }
            t.depth.set(t.depth.get() + 1);
        });
        CallScope(true)
    }

    /// The emitter, if a tool listens and the current call is traced.
    #[inline]
    pub(crate) fn tracer(&self) -> Option<Tracer<'a>> {
        let ompt = self.registry.ompt();
        if !ompt.active() {
            return None;
        }
        THREAD
            .with(|t| t.traced.get() && t.depth.get() > 0)
            .then_some(Tracer { ompt })
    }

    /// Run `op` between the data-op callbacks of `data` (the end sees what
    /// `end` makes of the result: the address an allocation returned).
    pub(crate) fn traced_op<R>(
        &self,
        data: DataOp,
        op: impl FnOnce() -> R,
        end: impl FnOnce(&R, &mut DataOp),
    ) -> R {
        let Some(tracer) = self.tracer() else {
            return op();
        };
        tracer.data_op(BEGIN, &data);
        let result = op();
        let mut data = data;
        end(&result, &mut data);
        tracer.data_op(END, &data);
        result
    }

    /// `DeviceTy::allocData`: allocate on `dev` between the alloc callbacks
    /// (`host_ptr` as the source; the plain callback sees no address yet).
    ///
    /// # Safety
    /// As [`super::DeviceOps::alloc`].
    #[inline]
    pub(crate) unsafe fn dev_alloc(
        &self,
        dev: &DeviceCtx<'_>,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<DevicePtr, OpFailed> {
        if !self.registry.ompt().active() {
            // No tool: no record of the operation is built.
            // SAFETY: our `# Safety` is the callee's.
            return unsafe { dev.ops.alloc(size, host_ptr, kind) };
        }
        let data = DataOp {
            kind: DataOpKind::Alloc,
            src: host_ptr as usize,
            src_device: self.initial_device(),
            dst: 0,
            dst_device: dev.id,
            bytes: size,
        };
        self.traced_op(
            data,
            // SAFETY: our `# Safety` is the callee's.
            || unsafe { dev.ops.alloc(size, host_ptr, kind) },
            |r, d| d.dst = r.as_ref().map_or(0, |p| p.addr()),
        )
    }

    /// `DeviceTy::deleteData`: free on `dev` between the delete callbacks.
    ///
    /// # Safety
    /// As [`super::DeviceOps::free`].
    #[inline]
    pub(crate) unsafe fn dev_free(
        &self,
        dev: &DeviceCtx<'_>,
        ptr: DevicePtr,
    ) -> Result<(), OpFailed> {
        if !self.registry.ompt().active() {
            // SAFETY: our `# Safety` is the callee's.
            return unsafe { dev.ops.free(ptr) };
        }
        let data = DataOp {
            kind: DataOpKind::Delete,
            src: ptr.addr(),
            src_device: dev.id,
            dst: 0,
            dst_device: -1,
            bytes: 0,
        };
        // SAFETY: our `# Safety` is the callee's.
        self.traced_op(data, || unsafe { dev.ops.free(ptr) }, |_, _| {})
    }

    /// A host -> device copy's callbacks around `op`.
    pub(crate) fn traced_submit<R>(
        &self,
        dev: &DeviceCtx<'_>,
        target: usize,
        host: usize,
        size: usize,
        op: impl FnOnce() -> R,
    ) -> R {
        let data = DataOp {
            kind: DataOpKind::ToDevice,
            src: host,
            src_device: self.initial_device(),
            dst: target,
            dst_device: dev.id,
            bytes: size,
        };
        self.traced_op(data, op, |_, _| {})
    }

    /// A device -> host copy's callbacks around `op`.
    pub(crate) fn traced_retrieve<R>(
        &self,
        dev: &DeviceCtx<'_>,
        host: usize,
        target: usize,
        size: usize,
        op: impl FnOnce() -> R,
    ) -> R {
        let data = DataOp {
            kind: DataOpKind::FromDevice,
            src: target,
            src_device: dev.id,
            dst: host,
            dst_device: self.initial_device(),
            bytes: size,
        };
        self.traced_op(data, op, |_, _| {})
    }

    /// `omp_target_associate_ptr` / `_disassociate_ptr`: LLVM emits both
    /// endpoints before the table changes (its RAII object is a temporary).
    pub(crate) fn trace_association(&self, data: DataOp) {
        self.traced_op(data, || (), |_, _| {});
    }

    /// Begin a traced region of `kind` on `dev` (after its device checks,
    /// as LLVM's); end it with [`Offload::ompt_region_end`].
    pub(crate) fn ompt_region_begin(&self, kind: RegionKind, dev: &DeviceCtx<'_>) {
        if let Some(tracer) = self.tracer() {
            tracer.region_begin(kind, dev.id);
        }
    }

    /// End a region [`Offload::ompt_region_begin`] began.
    pub(crate) fn ompt_region_end(&self, kind: RegionKind, dev: &DeviceCtx<'_>) {
        if let Some(tracer) = self.tracer() {
            tracer.region_end(kind, dev.id);
        }
    }

    /// `device_initialize` for a device that just initialised (LLVM's
    /// `GenericDeviceTy::init`): its kind, an opaque handle, libomp's lookup.
    pub(crate) fn ompt_device_initialized(&self, dev: &DeviceCtx<'_>) {
        let ompt = self.registry.ompt();
        let f = ompt.callback(Event::DeviceInitialize);
        if f == 0 {
            return;
        }
        let kind = dev.ops.compute_unit_kind();
        // SAFETY: the tool's `ompt_callback_device_initialize_t`; libomp's
        // lookup as bound (a C function or null).
        unsafe {
            let f: DeviceInitialize = std::mem::transmute(f);
            let lookup = std::mem::transmute::<usize, Option<Lookup>>(ompt.lookup.load(Relaxed));
            f(
                dev.id,
                kind.as_ptr(),
                dev.slot as *const _ as *mut c_void,
                lookup,
                std::ptr::null(),
            )
        };
    }

    /// `device_load` for an image just loaded on `dev` (LLVM's
    /// `GenericDeviceTy::loadBinary`, before the image's constructors):
    /// the image as the binary holds it, no file, no device address.
    pub(crate) fn ompt_image_loaded(&self, dev: &DeviceCtx<'_>, start: usize, bytes: usize) {
        let f = self.registry.ompt().callback(Event::DeviceLoad);
        if f == 0 {
            return;
        }
        // SAFETY: the tool's `ompt_callback_device_load_t`; plain values.
        unsafe {
            let f: DeviceLoad = std::mem::transmute(f);
            f(
                dev.id,
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
                bytes,
                start as *mut c_void,
                std::ptr::null_mut(),
                0,
            )
        };
    }

    /// At shutdown, before the devices are deinitialised: `device_finalize`
    /// for each device that initialised, in device order (LLVM's
    /// `GenericDeviceTy::deinit`); then no callback ever again.
    pub fn ompt_shutdown(&self) {
        let ompt = self.registry.ompt();
        if let f @ 1.. = ompt.callback(Event::DeviceFinalize) {
            // SAFETY: the tool's `ompt_callback_device_finalize_t`.
            let f: DeviceFinalize = unsafe { std::mem::transmute(f) };
            for id in 0..self.registry.num_devices() {
                let ready = self
                    .registry
                    .slot(id.into())
                    .and_then(|s| s.init.get().copied());
                if ready == Some(true) {
                    // SAFETY: a plain value.
                    unsafe { f(id) };
                }
            }
        }
        ompt.finalize();
    }
}
