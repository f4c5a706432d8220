//! LLVM 22's liboffload API (`ol*`) served by our library: a C program
//! built against the release's `OffloadAPI.h` and linked against its
//! `libLLVMOffload.so` (as a user builds one), run with the staged folder
//! first on `LD_LIBRARY_PATH`, where `libLLVMOffload.so.22.1` is ours.
//! The program (`tests/c/offload_api.c`) checks each answer itself and
//! prints what it found; it loads host kernels (`tests/c/offload_kernels.c`,
//! an x86_64 shared object) on a host device and launches them.

use omptarget_test_support::release::Release;
use omptarget_test_support::{clang::clang, valgrind, Outcome, Run, Scratch};
use std::path::{Path, PathBuf};

/// `-I` and `-L` of LLVM 22's liboffload (its `OffloadAPI.h` and
/// `libLLVMOffload.so`), as a user builds against them; `None` (and a
/// note) where the release is not unpacked, which only outside CI may be.
fn liboffload_flags() -> Option<(String, String)> {
    let lib = Release::Llvm22.reference_lib_dir();
    let include = lib.join("../include");
    if !include.join("offload/OffloadAPI.h").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "LLVM 22's OffloadAPI.h is missing under {} (run `cargo xtask deps`)",
            include.display()
        );
        eprintln!("skipping: LLVM 22's liboffload is not unpacked (cargo xtask deps)");
        return None;
    }
    Some((
        format!("-I{}", include.display()),
        format!("-L{}", lib.display()),
    ))
}

/// Build `offload_api.c` against LLVM 22's liboffload, and the host
/// kernel objects it loads (`offload_kernels.c`,
/// `offload_kernel_undefined.c`, which calls an undefined function, and
/// the C++ `offload_kernels_cxx.cpp`): the
/// program and the objects; `None` (and a note) where the release is not
/// unpacked outside CI.
fn build(scratch: &Scratch) -> Option<(PathBuf, [PathBuf; 3])> {
    let (include_flag, lib_flag) = liboffload_flags()?;
    let program = scratch.join("offload_api");
    clang(
        &["offload_api.c"],
        &program,
        &[&include_flag],
        &[&lib_flag, "-lLLVMOffload", "-ldl"],
    );
    let kernels = scratch.join("offload_kernels.so");
    clang(&["offload_kernels.c"], &kernels, &["-shared", "-fPIC"], &[]);
    let undefined = scratch.join("offload_kernel_undefined.so");
    clang(
        &["offload_kernel_undefined.c"],
        &undefined,
        &["-shared", "-fPIC"],
        &[],
    );
    let cxx = scratch.join("offload_kernels_cxx.so");
    clang(
        &["offload_kernels_cxx.cpp"],
        &cxx,
        &["-shared", "-fPIC"],
        &["-lstdc++"],
    );
    Some((program, [kernels, undefined, cxx]))
}

/// The program ran on our library, not LLVM's: the dynamic loader's
/// trace names the staged (or valgrind's) folder for `libLLVMOffload`.
fn assert_loaded_ours(out: &Outcome, dir: &Path) {
    let ours = format!("{}/libLLVMOffload.so.22.1", dir.display());
    assert!(
        out.stderr.contains(&ours),
        "libLLVMOffload.so.22.1 was not loaded from {}:\n{out}",
        dir.display()
    );
}

#[test]
fn a_liboffload_program_runs_on_our_runtime() {
    let scratch = Scratch::new("offload-api");
    let Some((program, kernels)) = build(&scratch) else {
        return;
    };
    let staged = omptarget_test_support::staged().lib_dir.clone();
    let out = Run::new(&scratch, &program)
        .arg(&kernels[0])
        .arg(&kernels[1])
        .arg(&kernels[2])
        .env("LD_DEBUG", "libs")
        .run();
    out.assert_success();
    assert_loaded_ours(&out, &staged);
    assert_eq!(out.value("failures"), "0", "{out}");
    // The built-in host plugin's devices and the initial device.
    let devices: usize = out.value("devices").parse().unwrap();
    assert!(devices >= 2, "{out}");
    // OL_DEVICE_TYPE_CPU, the x86_64 plugin's platform, backend UNKNOWN
    // (LLVM 22 has no CPU backend; HOST is the initial device's).
    assert_eq!(out.value("device_type"), "3", "{out}");
    assert_eq!(out.value("platform_name"), "x86_64", "{out}");
    assert_eq!(out.value("platform_backend"), "0", "{out}");
    assert!(!out.value("device_name").is_empty(), "{out}");
    // The host kernel ran twice (queued and not), on the device's memory.
    assert_eq!(out.value("kernel_runs"), "2", "{out}");
    // A C++ kernel object: its static constructor ran at load.
    assert_eq!(out.value("cxx_kernel"), "81", "{out}");
}

#[test]
fn a_liboffload_program_is_clean_under_valgrind() {
    let scratch = Scratch::new("offload-api-valgrind");
    let Some((program, kernels)) = build(&scratch) else {
        return;
    };
    let libs = valgrind::our_lib_dir()
        .unwrap_or_else(|e| panic!("no runtime to check under valgrind: {e}"));
    let out = Run::new(&scratch, Path::new("valgrind"))
        .env("LD_LIBRARY_PATH", &libs)
        .env("LD_DEBUG", "libs")
        .arg("--leak-check=full")
        .arg("--show-leak-kinds=definite,indirect")
        .arg("--errors-for-leak-kinds=definite,indirect")
        .arg("--error-exitcode=99")
        .arg(format!(
            "--suppressions={}",
            valgrind::suppressions().display()
        ))
        .arg(&program)
        .arg(&kernels[0])
        .arg(&kernels[1])
        .arg(&kernels[2])
        .run();
    out.assert_success();
    assert_loaded_ours(&out, &libs);
    assert_eq!(out.value("failures"), "0", "{out}");
    assert_eq!(out.value("kernel_runs"), "2", "{out}");
    assert!(
        out.stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors:\n{out}"
    );
    assert!(
        out.stderr.contains("definitely lost: 0 bytes")
            || out.stderr.contains("no leaks are possible"),
        "valgrind found lost blocks:\n{out}"
    );
}

/// The lifecycle's edges: the library that uses `ol*`
/// (`offload_api_user.c`), the program that dlopens it
/// (`offload_api_dlopen.c`, not linked with ours), and the fork and
/// thread-exit program (`offload_api_edges.c`); `None` where LLVM 22's
/// liboffload is not unpacked (outside CI).
fn build_edges(scratch: &Scratch) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let (include_flag, lib_flag) = liboffload_flags()?;
    let user = scratch.join("liboffload_api_user.so");
    clang(
        &["offload_api_user.c"],
        &user,
        &["-shared", "-fPIC", &include_flag],
        &[&lib_flag, "-lLLVMOffload"],
    );
    let dlopener = scratch.join("offload_api_dlopen");
    clang(&["offload_api_dlopen.c"], &dlopener, &[], &["-ldl"]);
    let edges = scratch.join("offload_api_edges");
    clang(
        &["offload_api_edges.c"],
        &edges,
        &[&include_flag],
        &[&lib_flag, "-lLLVMOffload", "-lpthread"],
    );
    Some((user, dlopener, edges))
}

/// `program args` under memcheck on our library: its run (the program's
/// status checked by the caller) after checking 0 errors and nothing
/// definitely or indirectly lost.
fn under_valgrind(
    scratch: &Scratch,
    program: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
) -> Outcome {
    under_valgrind_of(scratch, program, args, Release::Llvm14)
}

/// [`under_valgrind`] of a program of `release`, whose own `libomp.so.5`
/// is found after our library ([`Release::our_library_path`]).
fn under_valgrind_of(
    scratch: &Scratch,
    program: &Path,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    release: Release,
) -> Outcome {
    let ours = valgrind::our_lib_dir()
        .unwrap_or_else(|e| panic!("no runtime to check under valgrind: {e}"));
    let libs = release.our_library_path(&ours);
    let mut run = Run::new(scratch, Path::new("valgrind"))
        .env("LD_LIBRARY_PATH", &libs)
        .arg("--leak-check=full")
        .arg("--show-leak-kinds=definite,indirect")
        .arg("--errors-for-leak-kinds=definite,indirect")
        .arg("--fair-sched=yes")
        .arg(format!(
            "--suppressions={}",
            valgrind::suppressions().display()
        ))
        .arg(program);
    for a in args {
        run = run.arg(a);
    }
    let out = run.run();
    assert!(
        out.stderr.contains("ERROR SUMMARY: 0 errors"),
        "valgrind found errors:\n{out}"
    );
    out
}

/// An OpenMP offload program (clang-22's target regions) that also calls
/// `ol*` (`offload_api_mixed.c`), linked as LLVM 22's release links both
/// and run on ours, where both names are one library: target regions
/// before `olInit` and after the last `olShutDown`, `olMemAlloc`'s memory
/// in a target region, `omp_target_alloc`'s filled by a queued `olMemcpy`,
/// OpenMP's device 0 the first `ol*` CPU device. The report is clean, and
/// under valgrind there is no error and nothing lost.
#[test]
fn an_openmp_program_that_calls_liboffload_shares_one_runtime() {
    let scratch = Scratch::new("offload-api-mixed");
    let Some((include_flag, _)) = liboffload_flags() else {
        return;
    };
    let program = scratch.join("offload_api_mixed");
    let source = omptarget_test_support::paths::shim_c_source("offload_api_mixed.c");
    // As the differential suites build clang-22 programs: the release's
    // omp.h and link-time runtime (`Release::extra_flags`).
    let built = std::process::Command::new("clang-22")
        .args(["-O1", "-Wall", "-Werror", "-fopenmp"])
        .arg("-fopenmp-targets=x86_64-unknown-linux-gnu")
        .args(Release::Llvm22.extra_flags())
        .arg(&include_flag)
        .arg("-I")
        .arg(source.parent().expect("tests/c"))
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .arg("-lLLVMOffload")
        .output()
        .expect("run clang-22");
    assert!(
        built.status.success(),
        "clang-22 failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let report = scratch.join("report.txt");
    let staged = &omptarget_test_support::staged().lib_dir;
    let out = Run::new(&scratch, &program)
        .env("LD_LIBRARY_PATH", Release::Llvm22.our_library_path(staged))
        .env("LD_DEBUG", "files")
        .env("OMPTARGET_SHUTDOWN_REPORT", &report)
        .run();
    out.assert_success();
    assert_eq!(out.value("mixed"), "ok", "{out}");
    assert_loaded_ours(&out, staged);
    let text = std::fs::read_to_string(&report).expect("the shutdown report");
    for unclean in ["could not be released", "left by the program", "still held"] {
        assert!(!text.contains(unclean), "{unclean:?} in:\n{text}");
    }
    let out = under_valgrind_of(&scratch, &program, &[], Release::Llvm22);
    out.assert_success();
    assert_eq!(out.value("mixed"), "ok", "{out}");
}

/// dlopen and dlclose of a library that uses `ol*`, three times: each
/// dlclose unloads our library too (the program does not link it), each
/// dlopen starts a new session; every round works, and valgrind finds no
/// error and nothing lost.
#[test]
fn a_library_using_liboffload_survives_dlopen_and_dlclose() {
    let scratch = Scratch::new("offload-api-dlopen");
    let Some((user, dlopener, _)) = build_edges(&scratch) else {
        return;
    };
    let out = Run::new(&scratch, &dlopener).arg(&user).arg("3").run();
    out.assert_success();
    assert_eq!(out.value("rounds"), "3", "{out}");
    let out = under_valgrind(&scratch, &dlopener, &[&user, &"3"]);
    out.assert_success();
    assert_eq!(out.value("rounds"), "3", "{out}");
}

/// `olInit`, then fork: the child sees the same devices and shuts down,
/// and so does the parent (a fork in the middle of a context).
#[test]
fn liboffload_works_on_both_sides_of_a_fork() {
    let scratch = Scratch::new("offload-api-fork");
    let Some((_, _, edges)) = build_edges(&scratch) else {
        return;
    };
    let out = Run::new(&scratch, &edges).arg("fork").run();
    out.assert_success();
    let devices: usize = out.value("forked_devices").parse().unwrap();
    assert!(devices >= 2, "{out}");
}

/// Another thread calls `exit(0)` while this one keeps calling `ol*`:
/// the process ends with status 0 (no crash, no hang), also under
/// valgrind with no memory error.
#[test]
fn exit_from_another_thread_while_liboffload_calls_run() {
    let scratch = Scratch::new("offload-api-thread-exit");
    let Some((_, _, edges)) = build_edges(&scratch) else {
        return;
    };
    let out = Run::new(&scratch, &edges).arg("thread-exit").run();
    out.assert_success();
    let out = under_valgrind(&scratch, &edges, &[&"thread-exit"]);
    out.assert_success();
}

/// `offload_api_edges MODE`, with `env` and its shutdown report kept in
/// `report.txt` of the scratch folder: the run (status 0 checked), the
/// report's text (empty if none was written) and the program, for a run
/// under valgrind; `None` where LLVM 22's liboffload is not unpacked
/// (outside CI).
fn run_edges(
    name: &str,
    mode: &str,
    env: &[(&str, &str)],
) -> Option<(Scratch, Outcome, String, PathBuf)> {
    let scratch = Scratch::new(name);
    let (_, _, edges) = build_edges(&scratch)?;
    let report = scratch.join("report.txt");
    let mut run = Run::new(&scratch, &edges).env("OMPTARGET_SHUTDOWN_REPORT", &report);
    for (key, value) in env {
        run = run.env(key, value);
    }
    let out = run.arg(mode).run();
    out.assert_success();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    Some((scratch, out, text, edges))
}

/// A fork while a host function holds a queue back, with a copy queued
/// behind it: the child gets `OL_ERRC_INVALID_QUEUE` for the parent's
/// queue, makes its own and shuts down; the parent lets its function go
/// and finds the copy done.
#[test]
fn queues_work_on_both_sides_of_a_fork() {
    let Some((_, out, _, _)) = run_edges("offload-api-queue-fork", "queue-fork", &[]) else {
        return;
    };
    assert_eq!(out.value("queue_fork"), "ok", "{out}");
}

/// A host function that forks: the child's copy of the queue's worker
/// ends after the function (never touching the parent's queue, so the
/// child ends with status 0 instead of waiting for ever), and the work
/// queued behind the function runs once, in the parent.
#[test]
fn a_host_function_may_fork() {
    let Some((_, out, _, _)) = run_edges("offload-api-fork-in-function", "fork-in-function", &[])
    else {
        return;
    };
    assert_eq!(out.value("fork_in_function"), "ok", "{out}");
}

/// A host function that ends its thread (`pthread_exit`) on a queue's
/// worker: the worker does not end (the exit is stopped at the work's
/// frame, never unwound into the thread's start, which would abort the
/// process); the next `olSyncQueue` reports the work's failure
/// (`OL_ERRC_BACKEND_FAILURE`), and the queue's next work runs.
#[test]
fn a_host_function_that_ends_its_thread_fails_and_the_queue_goes_on() {
    let Some((_, out, _, _)) = run_edges(
        "offload-api-thread-exit-in-queue",
        "thread-exit-in-queue",
        &[],
    ) else {
        return;
    };
    assert_eq!(out.value("thread_exit_in_queue"), "ok", "{out}");
}

/// `exit(0)` while a host function blocks a queue for ever and a copy
/// waits behind it: status 0, no hang; the shutdown report lists the
/// worker left running; under valgrind, no error and nothing lost.
#[test]
fn exit_while_a_queue_has_work_ends_the_process_and_reports_its_worker() {
    let Some((scratch, _, text, edges)) = run_edges("offload-api-queue-exit", "queue-exit", &[])
    else {
        return;
    };
    assert!(
        text.contains("1 ol* queue worker thread(s): still running the program's code at exit"),
        "{text}"
    );
    under_valgrind(&scratch, &edges, &[&"queue-exit"]).assert_success();
}

/// `exit(0)` with a queue whose worker is idle (never destroyed, no
/// `olShutDown`): the worker is ended and joined, the report is clean and
/// valgrind finds no error and nothing lost.
#[test]
fn exit_with_an_idle_queue_worker_joins_it() {
    let Some((scratch, out, text, edges)) = run_edges(
        "offload-api-queue-idle",
        "queue-idle",
        &[("LIBOMPTARGET_DEBUG", "1")],
    ) else {
        return;
    };
    assert!(
        out.stderr.contains("a queue's worker ended and was joined"),
        "the worker was not joined at exit:\n{out}"
    );
    assert!(text.contains("omptarget shutdown"), "no report: {text}");
    assert!(!text.contains("could not be released"), "{text}");
    under_valgrind(&scratch, &edges, &[&"queue-idle"]).assert_success();
}

/// A queue, an event and a device block the program never destroyed or
/// freed before its last `olShutDown`: released then, and listed in the
/// shutdown report (for the reader: the API lets the program leave them
/// to its shutdown).
#[test]
fn the_shutdown_report_lists_what_a_liboffload_program_left() {
    let Some((_, _, text, _)) = run_edges("offload-api-leaky", "leaky", &[]) else {
        return;
    };
    for what in [
        "left by the program through other APIs (released for it):",
        "liboffload: queue 0x",
        "liboffload: event 0x",
        "liboffload: olMemAlloc block 0x",
        ", 96 bytes, never freed (left to the last olShutDown)",
    ] {
        assert!(text.contains(what), "no {what:?} in:\n{text}");
    }
    assert!(
        !text.contains("still held by the user"),
        "the block was freed at olShutDown, before the teardown:\n{text}"
    );
}

/// The GPU-style kernels of `offload_kernels_groups.c` and the dynamic
/// group memory one of `offload_kernels_dynamic_local.c`, built against
/// our `gpuintrin.h` for host devices, and the program that launches them
/// in groups of items (`offload_groups.c`); `None` where LLVM 22's
/// liboffload is not unpacked (outside CI).
fn build_groups(scratch: &Scratch) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let (include_flag, lib_flag) = liboffload_flags()?;
    let gpuintrin = concat!("-I", env!("CARGO_MANIFEST_DIR"), "/include/host-device");
    let [kernels, dynamic] =
        ["offload_kernels_groups", "offload_kernels_dynamic_local"].map(|name| {
            let object = scratch.join(&format!("{name}.so"));
            let source = format!("{name}.c");
            clang(&[&source], &object, &["-shared", "-fPIC", gpuintrin], &[]);
            object
        });
    let program = scratch.join("offload_groups");
    clang(
        &["offload_groups.c"],
        &program,
        &[&include_flag],
        &[&lib_flag, "-lLLVMOffload"],
    );
    Some((program, kernels, dynamic))
}

/// Groups of items on a host device, as a GPU runs them: every item of
/// every group sees its own ids in three dimensions, a group's items meet
/// at its barrier and share its memory (four groups of 256 items sum
/// their slices), each item is a warp of one lane; a group above 1024
/// items is refused and dynamic group memory does not load. Also under
/// valgrind (groups of at most 64 items there): no error, nothing lost.
#[test]
fn groups_of_items_run_as_a_gpu_runs_them() {
    let scratch = Scratch::new("offload-api-groups");
    let Some((program, kernels, dynamic)) = build_groups(&scratch) else {
        return;
    };
    let out = Run::new(&scratch, &program)
        .arg(&kernels)
        .arg(&dynamic)
        .run();
    out.assert_success();
    assert_eq!(out.value("failures"), "0", "{out}");
    assert_eq!(out.value("max_group_items"), "1024", "{out}");
    assert_eq!(out.value("group_sums"), "right", "{out}");
    // Memcheck runs one thread at a time: groups of at most 64 items there.
    let out = under_valgrind(&scratch, &program, &[&kernels, &dynamic, &"64"]);
    out.assert_success();
    assert_eq!(out.value("failures"), "0", "{out}");
    assert!(
        out.stderr.contains("definitely lost: 0 bytes")
            || out.stderr.contains("no leaks are possible"),
        "valgrind found lost blocks:\n{out}"
    );
}

/// The same `ol*` calls (`offload_api_differential.c`) on LLVM 22's
/// liboffload and on ours print the same: what LLVM's library serves
/// without a GPU (its host device's queries, host copies, the checks of
/// handles, pointers, sizes and enumerations, the counted lifecycle).
#[test]
fn the_same_calls_answer_the_same_on_llvms_liboffload_and_ours() {
    let scratch = Scratch::new("offload-api-differential");
    let Some((include_flag, lib_flag)) = liboffload_flags() else {
        return;
    };
    let program = scratch.join("offload_api_differential");
    clang(
        &["offload_api_differential.c"],
        &program,
        &[&include_flag],
        &[&lib_flag, "-lLLVMOffload"],
    );
    let llvm_dir = Release::Llvm22.reference_lib_dir();
    let ours_dir = omptarget_test_support::staged().lib_dir.clone();
    let run = |dir: &Path| {
        let out = Run::new(&scratch, &program)
            .env("LD_LIBRARY_PATH", dir)
            .env("LD_DEBUG", "libs")
            .run();
        out.assert_success();
        let loaded = format!("{}/libLLVMOffload.so.22.1", dir.display());
        assert!(out.stderr.contains(&loaded), "not {loaded}:\n{out}");
        out.stdout
    };
    let llvm = run(&llvm_dir);
    let ours = run(&ours_dir);
    assert!(llvm.contains("host device found: 1"), "{llvm}");
    assert!(llvm.contains("copied: fifteen bytes.."), "{llvm}");
    assert_eq!(llvm, ours, "LLVM 22's liboffload and ours differ");
}
