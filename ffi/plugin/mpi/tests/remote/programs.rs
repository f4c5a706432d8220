//! The differential suite's programs (`tests/c`) on remote devices: each
//! binary of clang 14, 19 and 22 runs twice on our runtime, once on the
//! local host plugin (4 devices) and once in an MPI job where its only
//! plugin is the MPI one (2 servers x 2 host devices: again 4 devices,
//! all remote). Exit status and stdout must be the same.
use crate::job;
use omptarget_test_support::exec::{self, Exit};
use omptarget_test_support::release::Release;
use omptarget_test_support::suite::{build, pool, spec};
use omptarget_test_support::{paths, stage};
use std::time::Duration;

/// Programs that cannot run the same on remote devices, and why. Each is
/// a kind of program the MPI plugin refuses on purpose (docs/mpi.md),
/// or one whose output names the plugin or devices by their local kind.
const NOT_REMOTE: &[(&str, &str)] = &[
    ("requires_usm", "requires unified_shared_memory: refused on remote devices"),
    ("requires_usm_globals", "requires unified_shared_memory: refused on remote devices"),
    ("usm_struct_objects", "requires unified_shared_memory: refused on remote devices"),
    ("requires_unified_address", "requires unified_address: refused on remote devices"),
    ("requires_inconsistent_dlopen", "requires unified_shared_memory: refused on remote devices"),
    ("llvm_target_alloc_kinds", "host and shared allocations (omp_target_alloc_host/shared): refused on remote devices"),
    ("virtual_functions_in_region", "calls through a vtable pointer, a host address of the program's process"),
    ("mapper_implicit_remap_quirk", "the region writes through a host pointer (LLVM 14's quirk needs a shared address space)"),
    ("mapper_nested_attached_pointer", "the region writes through a host pointer (LLVM 19's quirk needs a shared address space)"),
    ("lock_mem", "host and shared allocations (omp_target_alloc_host/shared): refused on remote devices"),
    ("device_ctor_on_lookup", "prints from a device constructor, which runs in the server's process: the order of two processes' output is the launcher's"),
    ("device_global_dtor_at_exit", "prints from device constructors and destructors, which run in the server's process: the order of two processes' output is the launcher's"),
    ("device_uid_accessible", "prints device UIDs, which name the plugin (mpi-N, not x86_64-N)"),
    ("device_query", "omp_get_device_num() inside a region answers for the process the region runs in (the server's)"),
    ("info_levels", "runs itself again as a child process, which inherits the job's MPI environment"),
    ("invalid_device_api_fatal", "runs itself again as a child process per call, which inherits the job's MPI environment"),
    ("cxx_usm_virtual_diamond", "requires unified_shared_memory: refused on remote devices"),
];

fn not_remote(name: &str) -> Option<&'static str> {
    NOT_REMOTE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why)
}

fn differential(release: Release) {
    let staged = stage::staged();
    let tc = build::Toolchain::detect_release(release).unwrap_or_else(|e| panic!("{e}"));
    let filter = std::env::var("OMPTARGET_DIFF_FILTER").ok();
    let programs: Vec<_> = spec::discover(&paths::programs_dir(), filter.as_deref())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|p| p.releases.contains(&release) && not_remote(&p.name).is_none())
        .collect();
    assert!(!programs.is_empty(), "no program to run");
    let lib_path = release.our_library_path(&staged.lib_dir);
    let failures: Vec<String> = pool::par_map(&programs, pool::jobs().min(2), |program| {
        let built = match build::build(program, &tc) {
            Ok(built) => built,
            Err(err) => return Some(format!("{}: {err}", program.name)),
        };
        let mut local_env = program.env.clone();
        local_env.push(("OMPTARGET_HOST_DEVICES".into(), "4".into()));
        let mut local = exec::command(&built.binary, &built.args, &local_env, &lib_path);
        local.current_dir(&built.out_dir);
        let local = exec::run(local, Duration::from_secs(60)).expect("runs");
        let mut remote =
            job::remote_only_job(&built.binary, &built.args, &program.env, &lib_path, 2, 2);
        remote.current_dir(&built.out_dir);
        let remote = job::run(remote);
        let same_exit = match (local.exit, remote.exit) {
            // mpirun reports a rank's death by signal S as status 128 + S.
            (Some(Exit::Signal(s)), Some(Exit::Code(c))) => c == 128 + s,
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        if same_exit && local.stdout == remote.stdout {
            None
        } else {
            Some(format!(
                "{} (clang-{}): local {} / remote {}\n--- local stdout\n{}--- remote stdout\n{}--- remote stderr\n{}",
                program.name,
                release.major(),
                local.exit_text(),
                remote.exit_text(),
                local.stdout,
                remote.stdout,
                remote.stderr
            ))
        }
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(
        failures.is_empty(),
        "{} of {} programs differ on remote devices:\n{}",
        failures.len(),
        programs.len(),
        failures.join("\n")
    );
}

#[test]
fn clang_14_programs_run_the_same_on_remote_devices() {
    differential(Release::Llvm14);
}

#[test]
fn clang_19_programs_run_the_same_on_remote_devices() {
    differential(Release::Llvm19);
}

#[test]
fn clang_22_programs_run_the_same_on_remote_devices() {
    differential(Release::Llvm22);
}

/// What cannot work remotely is refused with an error that says why:
/// `requires unified_shared_memory` (clang 14's `requires_usm`), and host
/// and shared allocations (clang 22's `llvm_target_alloc_kinds`).
#[test]
fn what_needs_shared_memory_is_refused_with_a_clear_error() {
    let staged = stage::staged();
    for (release, name, expected) in [
        (
            Release::Llvm14,
            "requires_usm",
            "the program requires unified_shared_memory (requires flags 0x8), which no remote device can give",
        ),
        (
            Release::Llvm22,
            "llvm_target_alloc_kinds",
            "Host memory (host-accessible) cannot be allocated on a remote device",
        ),
    ] {
        let tc = build::Toolchain::detect_release(release).unwrap_or_else(|e| panic!("{e}"));
        let program = spec::discover(&paths::programs_dir(), Some(name))
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no program {name}"));
        let built = build::build(&program, &tc).unwrap_or_else(|e| panic!("{e}"));
        let lib_path = release.our_library_path(&staged.lib_dir);
        let mut job = job::remote_only_job(&built.binary, &built.args, &program.env, &lib_path, 1, 1);
        job.current_dir(&built.out_dir);
        let out = job::run(job);
        assert!(
            out.stderr.contains(expected),
            "{name}: {}\n{}",
            out.exit_text(),
            out.stderr
        );
    }
}
