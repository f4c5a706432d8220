//! OMPT device tracing over the test devices: which callbacks a traced
//! call makes and in which order, that LLVM 14 callers and a finalized
//! tool get none, and that the disabled path asks nothing of the host.

use super::*;
use crate::ompt::Ompt;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, CStr};

thread_local! {
    // The callbacks run on the test's own thread: each test reads its own.
    static EVENTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn record(event: String) {
    EVENTS.with(|e| e.borrow_mut().push(event));
}

fn take_events() -> Vec<String> {
    EVENTS.with(|e| std::mem::take(&mut *e.borrow_mut()))
}

unsafe extern "C" fn on_device_initialize(
    device: c_int,
    _kind: *const c_char,
    _handle: *mut c_void,
    _lookup: *const c_void,
    _doc: *const c_char,
) {
    record(format!("device_initialize {device}"));
}
unsafe extern "C" fn on_device_load(
    device: c_int,
    _file: *const c_char,
    _offset: i64,
    _vma: *mut c_void,
    bytes: usize,
    _host: *mut c_void,
    _dev: *mut c_void,
    _module: u64,
) {
    record(format!("device_load {device} {bytes}"));
}
unsafe extern "C" fn on_device_finalize(device: c_int) {
    record(format!("device_finalize {device}"));
}
unsafe extern "C" fn on_target(
    kind: c_int,
    endpoint: c_int,
    device: c_int,
    _task: *mut u64,
    id: u64,
    code: *const c_void,
) {
    record(format!(
        "target {kind} {endpoint} {device} id={id} code={}",
        code as usize
    ));
}
unsafe extern "C" fn on_data_op(
    target: u64,
    op_id: u64,
    op: c_int,
    _src: *mut c_void,
    src_device: c_int,
    dst: *mut c_void,
    dst_device: c_int,
    bytes: usize,
    _code: *const c_void,
) {
    let dst = if dst.is_null() { "null" } else { "set" };
    record(format!(
        "data_op {target} {op_id} op={op} {src_device}->{dst_device} dst={dst} {bytes}"
    ));
}
unsafe extern "C" fn on_submit(target: u64, op_id: u64, teams: c_uint) {
    record(format!("submit {target} {op_id} teams={teams}"));
}

/// libomp's `ompt_get_callback`: the plain callbacks and the device ones.
unsafe extern "C" fn get_callback(code: c_int, found: *mut *mut c_void) -> c_int {
    let f: *mut c_void = match code {
        8 => on_target as *mut c_void,
        9 => on_data_op as *mut c_void,
        10 => on_submit as *mut c_void,
        12 => on_device_initialize as *mut c_void,
        13 => on_device_finalize as *mut c_void,
        14 => on_device_load as *mut c_void,
        _ => return 0,
    };
    // SAFETY: `bind` passes a writable slot.
    unsafe { *found = f };
    1
}

unsafe extern "C" fn lookup(name: *const c_char) -> *mut c_void {
    // SAFETY: `bind` passes NUL-terminated names.
    match unsafe { CStr::from_ptr(name) }.to_bytes() {
        b"ompt_get_callback" => get_callback as *mut c_void,
        _ => std::ptr::null_mut(),
    }
}

/// A world whose registry has its own tool table (bound if `bound`) and
/// whose calls come from a binary of `release`, with one kernel
/// registered on two devices.
fn traced_world(bound: bool, release: Release) -> (World, TestBinary) {
    let mut w = World::mandatory(&[(TAG_A, 2)]);
    let ompt: &'static Ompt = Box::leak(Box::new(Ompt::new()));
    if bound {
        // SAFETY: `lookup` answers as libomp's does for these names.
        unsafe { ompt.bind(lookup) };
    }
    w.registry = Registry::with_ompt(ompt);
    *w.host.release.lock().unwrap() = release;
    let bin = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    take_events();
    // SAFETY: `bin` owns a valid descriptor, alive for the test.
    unsafe { w.off().register_lib(bin.desc()) };
    (w, bin)
}

/// Run `bin`'s kernel on device 0 with `a` mapped `tofrom`.
fn run_region(w: &World, bin: &TestBinary, a: &mut [i32; 4]) {
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO | mt::FROM | mt::TARGET_PARAM);
    // SAFETY: `bin.addrs[0]` is the registered kernel; `args` names `a`,
    // live for the call.
    unsafe {
        w.off().target(
            null(),
            0,
            bin.addrs[0] as *mut c_void,
            &args.view(),
            0,
            0,
            false,
        )
    }
    .unwrap();
}

#[test]
fn a_traced_region_reports_as_llvm_19() {
    let (w, bin) = traced_world(true, Release::Llvm19);
    // Both devices start at the registration, as LLVM 19's do.
    assert_eq!(
        take_events(),
        ["device_initialize 0", "device_initialize 1"]
    );
    let mut a = [1, 2, 3, 4];
    run_region(&w, &bin, &mut a);
    let events = take_events();
    assert!(events[0].starts_with("device_load 0 "), "{events:?}");
    // The test host has no return address: tools still get a non-null one.
    assert_eq!(
        events[1..],
        [
            "target 1 1 0 id=1 code=1",
            "data_op 1 2 op=1 2->0 dst=null 16",
            "data_op 1 3 op=2 2->0 dst=set 16",
            "submit 1 4 teams=1",
            "data_op 1 5 op=3 0->2 dst=set 16",
            "data_op 1 6 op=4 0->-1 dst=null 0",
            "target 1 2 0 id=1 code=1",
        ]
    );
    // `target enter data` keeps id 0 (LLVM's plain callback gets none).
    let mut args = Args::default();
    args.map(a.as_mut_ptr(), 16, mt::TO);
    // SAFETY: `args` names `a`, live for the calls.
    unsafe { w.off().target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
    assert_eq!(
        take_events(),
        [
            "target 2 1 0 id=0 code=1",
            "data_op 0 7 op=1 2->0 dst=null 16",
            "data_op 0 8 op=2 2->0 dst=set 16",
            "target 2 2 0 id=0 code=1",
        ]
    );
    // At shutdown, each initialised device, then nothing more.
    w.off().ompt_shutdown();
    assert_eq!(take_events(), ["device_finalize 0", "device_finalize 1"]);
    run_region(&w, &bin, &mut a);
    assert!(take_events().is_empty());
}

#[test]
fn llvm_14_callers_are_not_traced() {
    let (w, bin) = traced_world(true, Release::Llvm14);
    // No eager start: devices initialise at their first use.
    assert!(take_events().is_empty());
    let mut a = [1, 2, 3, 4];
    run_region(&w, &bin, &mut a);
    assert!(
        take_events().iter().all(|e| e.starts_with("device_")),
        "no region or operation callbacks for a clang 14 binary"
    );
}

#[test]
fn a_finalized_tool_hears_nothing() {
    let (w, bin) = traced_world(true, Release::Llvm22);
    w.registry.ompt().finalize();
    take_events();
    let mut a = [1, 2, 3, 4];
    run_region(&w, &bin, &mut a);
    w.off().ompt_shutdown();
    assert!(take_events().is_empty());
}

#[test]
fn without_a_tool_the_host_is_not_asked() {
    let (w, bin) = traced_world(false, Release::Llvm19);
    let asked = w
        .host
        .release_asked
        .load(std::sync::atomic::Ordering::SeqCst);
    let mut a = [1, 2, 3, 4];
    run_region(&w, &bin, &mut a);
    assert_eq!(
        w.host
            .release_asked
            .load(std::sync::atomic::Ordering::SeqCst),
        asked,
        "the disabled path walks no stack"
    );
    assert!(take_events().is_empty());
}
