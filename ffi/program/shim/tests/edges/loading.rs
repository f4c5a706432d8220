//! Image loads racing registrations; a kernel that ends its thread (pthread_exit, cancellation); an unusable TMPDIR.

use super::*;

/// A thread runs the program's own target regions on 8 host devices in
/// turn (each library registration makes its next region on every device
/// load the new image: the host plugin dlopens it) while the main thread
/// dlopens the offload library (its constructor registers under the
/// dynamic loader's lock), runs its region on device (cycle % 8) and
/// dlcloses it, 150 times: no deadlock, every result right.
///
/// Before the fix: deadlocks in 5/5 runs (killed at 30 s) and on the first
/// attempt under gdb: a lock-order inversion between the runtime's
/// registry lock and the loader's lock. Thread A: `own_offloads ->
/// Offload::target -> check_device_and_ctors -> init_library ->
/// load_images -> __tgt_rtl_load_binary -> LoadedImage::load -> dlopen ->
/// _dl_open -> pthread_mutex_lock(_rtld_global dl_load_lock)`, holding
/// the registry tables; main: `dlclose -> _dl_close_worker ->
/// _dl_call_fini -> __tgt_unregister_lib -> Offload::unregister_lib ->
/// Registry::registered_libs -> lock_tables` (holding the loader lock).
/// Again 4/5 (timeout 30 s) just before the fix.
///
/// The fix: no lock of ours is held across `load_binary`/`unload_binary`
/// (`omptarget_openmp`'s `load` module; the plugin's image lock is gone),
/// so a thread waiting for the loader's lock holds none of ours.
#[test]
fn library_registration_during_an_image_load_does_not_deadlock() {
    let scratch = Scratch::new("edge-register-during-load");
    let lib = build_offload_lib(&scratch);
    let program = build(&scratch, "edge_register_during_load.c");
    let out = Run::new(&scratch, &program)
        .arg(&lib)
        .env("OMPTARGET_HOST_DEVICES", "8")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), "8", "{out}");
    assert_eq!(out.value("cycles"), "150", "{out}");
    assert_eq!(out.value("lib_wrong"), "0", "{out}");
    assert_eq!(out.value("own_wrong"), "0", "{out}");
    assert_ne!(out.value("own_regions"), "0", "{out}");
    assert_eq!(out.stderr, "", "{out}");
}

/// A thread's kernel (in a region mapping an array) calls
/// `pthread_exit((void *)42)`: the join gets 42, the program maps the
/// same array in a new region on the same device, gets its result, and
/// exits 0.
///
/// Before the fix: aborts (134) with "FATAL: exception not rethrown" (3/3):
/// glibc's forced unwind of pthread_exit is caught by a `catch_unwind` of
/// the runtime (the plugin's entry guard or the shim's boundary) and not
/// resumed.
#[test]
fn pthread_exit_inside_a_kernel_then_offload_again() {
    let scratch = Scratch::new("edge-pthread-exit");
    let program = build(&scratch, "edge_thread_ends_in_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("exit")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("joined"), "42", "{out}");
    assert_eq!(out.value("again"), "32640", "{out}");
}

/// A thread's kernel loops on `usleep` + `pthread_testcancel`; the main
/// thread cancels it: the join gets `PTHREAD_CANCELED`, the program
/// offloads again (same array, same device) and exits 0.
///
/// Before the fix: aborts (134) with "FATAL: exception not rethrown"
/// (3/3), as for `pthread_exit`.
#[test]
fn pthread_cancel_inside_a_kernel_then_offload_again() {
    let scratch = Scratch::new("edge-pthread-cancel");
    let program = build(&scratch, "edge_thread_ends_in_kernel.c");
    let out = Run::new(&scratch, &program)
        .arg("cancel")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("joined"), "canceled", "{out}");
    assert_eq!(out.value("again"), "32640", "{out}");
}

/// `TMPDIR=/nonexistent/dir`: a plain offload program on the host plugin
/// still runs on every device with right results.
///
/// Before the fix: aborts (134) (3/3): the host plugin writes each image
/// to a file in the temp dir to dlopen it ("cannot create an image file
/// in /nonexistent/dir"), so no image loads and the mandatory offload is
/// fatal.
#[test]
fn an_unusable_tmpdir_does_not_stop_offloading() {
    let scratch = Scratch::new("edge-tmpdir");
    let program = build(&scratch, "edge_plain_offload.c");
    let out = Run::new(&scratch, &program)
        .env("TMPDIR", "/nonexistent/dir")
        .timeout(HANG_LIMIT)
        .run();
    out.assert_success();
    assert_eq!(out.value("devices"), "4", "{out}");
    assert_eq!(out.value("sum"), "130560", "{out}");
    assert_eq!(out.value("result"), "ok", "{out}");
    assert_eq!(out.stderr, "", "{out}");
}
