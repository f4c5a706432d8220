//! Memory checking of the C/C++ programs of `tests/c` on OUR runtime
//! (`target/omptarget/lib`, staged with `cargo run -q -p xtask -- stage`)
//! under valgrind's memcheck.
//!
//! `every_program_is_clean_under_valgrind` (clang-14 builds) and its
//! clang-19 and clang-22 siblings: each program of the release (except those
//! marked `// NO-VALGRIND: reason`) runs under
//! `valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect
//! --show-leak-kinds=all --xml=yes`, and the XML report must show
//! - no memory error (invalid reads/writes, bad frees, fishy arguments, ...),
//!   except the suppressions in `tests/support/valgrind.supp`, each of which
//!   documents why it is not ours, and except uninitialised-value errors that
//!   are provably not ours (next point);
//! - uninitialised-value errors are ours and fail unless the undefined bytes were created by a *stack* allocation
//!   outside our libraries and no frame of ours is on the error's stack.
//!   Why: clang 14 passes every firstprivate scalar narrower than 8 bytes
//!   (int, char, float, and the loop-bound captures of `teams distribute`) in
//!   an 8-byte "casted" stack slot of which it writes only the low bytes.
//!   Memcheck tracks those undefined high bytes through whatever copies the
//!   slot; vectorised arithmetic (LLVM 14's x86_64 plugin adds the argument
//!   offsets with SIMD; libomp copies fork arguments) makes whole values look
//!   undefined, and the kernel's results then trip "conditional jump depends
//!   on uninitialised value" in the kernel, libomp or the program's printf.
//!   LLVM 14 shows these on firstprivate_scalar.c, literal_args.c,
//!   implicit_maps.c, dlopen_loop.c and others, with correct results. Data
//!   our runtime failed to initialise would have a heap origin (or an origin
//!   in our code) and still fails;
//! - no definitely or indirectly lost block, whoever allocated it;
//! - no still-reachable or possibly-lost block that OUR libraries
//!   (`libomptarget.so`, `libomptarget.rtl.x86_64.so` of the tested library
//!   directory) allocated: our runtime shuts down completely at the last
//!   `__tgt_unregister_lib`, so anything of ours alive at exit is a leak.
//!
//! The program must also end as its `// EXIT:` directive says. For programs
//! that are expected to die by a signal (libomptarget's fatal errors abort),
//! only memory errors are checked: nothing is torn down on abort, so leak
//! records say nothing there.
//!
//! Who owns a block: valgrind's allocation stack is walked from the innermost
//! frame outwards, skipping the allocator and system libraries (libc, ld.so,
//! libstdc++, libgcc_s, libm); the first other object is the owner. So a
//! block libomp allocates while we call into it (e.g. its lazy runtime
//! initialisation from `__kmpc_get_target_offload` or `omp_get_default_device`)
//! belongs to libomp, and a block glibc allocates because our code asked
//! for it (a `strdup`, say) belongs to us. One exception: the dynamic
//! loader's own records of an object still mapped at exit (allocated in
//! ld.so itself, under our dlopen). The runtime dlcloses its plugins at the
//! last `__tgt_unregister_lib`, which clang-14 binaries call from the
//! executable's `.fini_array`; glibc's `_dl_fini` pins every object while
//! finalizers run, so that dlclose cannot unmap and ld.so keeps its records
//! until the process is gone (LLVM's runtime leaves the same ones). They are
//! accepted only if the run's shutdown report (`OMPTARGET_SHUTDOWN_REPORT`)
//! shows every plugin closed and nothing left unreleased.
//!
//! What LLVM 14 itself leaves at exit (measured on map_tofrom_array.c with
//! /usr/lib/llvm-14/lib; see tests/c/README.md): about 180 KB still reachable
//! in ~2270 blocks, nearly all from libLLVM-14.so.1 (its static option
//! registry, pulled in by libomptarget.so 14) plus libstdc++'s emergency
//! exception pool, libz3 and a few ld.so records; and 2 "possibly lost"
//! blocks (2.5 KB) that libomp allocates during its lazy initialisation when
//! libomptarget calls `__kmpc_get_target_offload` from `__tgt_register_lib`.
//! libomp never frees those before exit: they are libomp's, not ours, and
//! the ownership rule above attributes them to libomp for our runtime too.
//!
//! `dlopen_loop_memory_does_not_grow`: dlopen_loop.c loads, uses and unloads
//! an offload library N times. Under valgrind with N=10 and N=100 the bytes
//! and blocks still allocated at exit (all leak kinds summed) must be the same
//! up to less than one byte and one block per extra iteration: a leak of
//! anything per load/unload cycle shows up at least 90 times. (LLVM 14: the
//! two numbers are exactly equal.)
//!
//! Knobs: `OMPTARGET_DIFF_FILTER`, `OMPTARGET_DIFF_JOBS` as in
//! differential.rs; `OMPTARGET_VALGRIND_LIB_DIR=dir` checks the runtime in
//! `dir` instead of staging ours (e.g. `/usr/lib/llvm-14/lib` to see what the
//! rules say about LLVM's own runtime; `cargo xtask test` sets it to
//! `target/omptarget/lib-release`, the release build as staged: the build
//! users install, which memcheck runs 2.3 times as fast as the debug
//! build); `OMPTARGET_VALGRIND_TIMEOUT=secs` per
//! run (default 600). Reports are kept as
//! `target/omptarget/c-tests/<program>/valgrind*.xml`.

use omptarget_test_support::exec;
use omptarget_test_support::paths;
use omptarget_test_support::release::Release;
use omptarget_test_support::suite::build::{self, Built, Toolchain};
use omptarget_test_support::suite::pool;
use omptarget_test_support::suite::spec::{self, Exit, Program};
use omptarget_test_support::valgrind::{self as valgrind_xml, Error, Report};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Exit code valgrind uses when it found errors; distinct from the programs'
/// own codes (0, 1 for a wrong result, 2..5 for setup failures).
const VALGRIND_ERROR_EXIT: i32 = 99;

/// The runtime libraries whose leftovers count as ours.
const OUR_LIBS: &[&str] = &["libomptarget.so", "libomptarget.rtl.x86_64.so"];

fn timeout() -> Duration {
    let secs = std::env::var("OMPTARGET_VALGRIND_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// The runtime under test and what to call its libraries.
struct Subject {
    lib_dir: PathBuf,
    /// Canonical paths of OUR_LIBS in `lib_dir`.
    our_objects: Vec<PathBuf>,
}

impl Subject {
    /// True when the library under test is ours (it writes shutdown reports).
    fn is_ours_runtime(&self) -> bool {
        !self.our_objects.is_empty()
            && self
                .our_objects
                .iter()
                .all(|o| !o.starts_with("/usr/lib/llvm-14"))
    }

    fn new(lib_dir: PathBuf) -> Subject {
        let our_objects = OUR_LIBS
            .iter()
            .filter_map(|lib| std::fs::canonicalize(lib_dir.join(lib)).ok())
            .collect();
        Subject {
            lib_dir,
            our_objects,
        }
    }

    fn is_ours(&self, obj: &str) -> bool {
        let canonical = std::fs::canonicalize(obj).unwrap_or_else(|_| PathBuf::from(obj));
        self.our_objects.contains(&canonical)
    }

    /// An uninitialised-value error whose undefined bytes come from a stack
    /// allocation in a function that is not ours, and that happened in code
    /// that is not ours (see the module docs for why these are clang 14's).
    fn is_clang_casted_slot_artifact(&self, e: &Error) -> bool {
        let uninit_kind = is_uninitialised_value(e);
        // An error in plumbing alone (e.g. exit_group of an undefined exit
        // status) happened in nobody's code in particular.
        let error_not_ours = valgrind_xml::owner(&e.stack).is_none_or(|o| !self.is_ours(o));
        let origin_not_ours = e.origin().is_some_and(|(note, frames)| {
            note.contains("created by a stack allocation")
                && valgrind_xml::owner(frames).is_some_and(|o| !self.is_ours(o))
        });
        uninit_kind && error_not_ours && origin_not_ours
    }
}

/// An error about the use of undefined bytes: only these need origins.
fn is_uninitialised_value(e: &Error) -> bool {
    matches!(e.kind.as_str(), "UninitCondition" | "UninitValue")
        || (e.kind == "SyscallParam" && e.what.contains("uninitialised"))
}

fn detect_valgrind() -> Result<(), String> {
    let ok = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(())
    } else {
        Err(
            "valgrind is not installed (apt-get install valgrind); the memory checks need it"
                .into(),
        )
    }
}

/// The library directory under test: OMPTARGET_VALGRIND_LIB_DIR or ours.
fn subject() -> Subject {
    let dir = valgrind_xml::lib_dir()
        .unwrap_or_else(|e| panic!("cannot check our runtime under valgrind: {e}"));
    Subject::new(dir)
}

/// Runs `built` with `args` under valgrind on `subject`'s runtime, writing
/// the XML report to `xml`: first without origins; if the report has an
/// uninitialised-value error, again with `--track-origins=yes`, whose
/// report is returned with the first run's other memory errors added
/// (origins tell clang's partially written argument slots apart from
/// undefined data of ours: see the module docs).
/// Tracking origins makes a run about a quarter slower, and 3 in 73 of the
/// suite's programs need it.
fn run_under_valgrind(
    program: &Program,
    built: &Built,
    args: &[String],
    subject: &Subject,
    release: Release,
    xml: &Path,
) -> Result<(exec::RunOutput, Report), String> {
    // One memcheck run, with or without origins.
    let memcheck = |origins: bool| -> Result<(exec::RunOutput, Report), String> {
        let supp = valgrind_xml::suppressions();
        let mut vg_args: Vec<String> = [
            "--tool=memcheck",
            "--leak-check=full",
            "--show-leak-kinds=all",
            "--errors-for-leak-kinds=definite,indirect",
            // Keep symbols of libraries unloaded before exit (dlclosed plugins and
            // offload images), so their allocation stacks stay attributable.
            "--keep-debuginfo=yes",
            "--num-callers=50",
            // Reading the inlining records of our debug-built libraries was a
            // fifth of a run (map_alloc.c: 1.68 -> 1.33 s); a debug build
            // inlines little, and owners are told apart by object, not frame.
            "--read-inline-info=no",
            // Valgrind runs one thread at a time; without this a thread that
            // loops may hold the CPU for long stretches (the programs with
            // host threads).
            "--fair-sched=yes",
            "--xml=yes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if origins {
            vg_args.push("--track-origins=yes".into());
        }
        vg_args.push(format!("--error-exitcode={VALGRIND_ERROR_EXIT}"));
        vg_args.push(format!("--suppressions={}", supp.display()));
        vg_args.push(format!("--xml-file={}", xml.display()));
        vg_args.push(built.binary.to_string_lossy().into_owned());
        vg_args.extend(args.iter().cloned());
        let _ = std::fs::remove_file(xml);
        let report_file = shutdown_report_path(xml);
        let _ = std::fs::remove_file(&report_file);
        let mut env = program.env.clone();
        env.push((
            "OMPTARGET_SHUTDOWN_REPORT".into(),
            report_file.to_string_lossy().into_owned(),
        ));
        // clang 19/22 binaries find their release's libomp after our runtime.
        let cmd = exec::command(
            Path::new("valgrind"),
            &vg_args,
            &env,
            release.our_library_path(&subject.lib_dir),
        );
        let out = exec::run(cmd, timeout()).map_err(|e| format!("cannot run valgrind: {e}"))?;
        let text = std::fs::read_to_string(xml).map_err(|e| {
            format!(
                "valgrind wrote no report at {} ({e}; valgrind {}); its stderr:\n{}",
                xml.display(),
                out.exit_text(),
                out.stderr
            )
        })?;
        Ok((out, valgrind_xml::parse(&text)))
    };
    let first = memcheck(false)?;
    if !first.1.errors.iter().any(is_uninitialised_value) {
        return Ok(first);
    }
    let (out, mut report) = memcheck(true)?;
    // Origins change no verdict of memcheck's, but a threaded program may
    // show an error in one run and not the other: the first run's other
    // memory errors are judged too.
    for e in first.1.errors {
        let seen = report
            .errors
            .iter()
            .any(|r| r.kind == e.kind && r.what == e.what);
        if !e.is_leak() && !is_uninitialised_value(&e) && !seen {
            report.errors.push(e);
        }
    }
    Ok((out, report))
}

fn describe(e: &Error) -> String {
    format!("  [{}] {}\n{}", e.kind, e.what, e.stack_text())
}

/// Checks one program; returns the list of problems (empty: clean).
fn check_program(program: &Program, tc: &Toolchain, subject: &Subject) -> Vec<String> {
    let built = match build::build(program, tc) {
        Ok(b) => b,
        Err(e) => return vec![e],
    };
    let xml = built.out_dir.join("valgrind.xml");
    let release = tc.release;
    let (out, report) =
        match run_under_valgrind(program, &built, &built.args, subject, release, &xml) {
            Ok(r) => r,
            Err(e) => return vec![e],
        };
    let mut problems = Vec::new();
    let all_memory_errors: Vec<&Error> = report.errors.iter().filter(|e| !e.is_leak()).collect();
    let memory_errors: Vec<&Error> = all_memory_errors
        .iter()
        .copied()
        .filter(|e| !subject.is_clang_casted_slot_artifact(e))
        .collect();
    let dies_by_signal = matches!(program.expected_exit_for(release), Exit::Signal(_));
    // valgrind exits with VALGRIND_ERROR_EXIT for tolerated errors too.
    let expected_exit = if all_memory_errors.is_empty() || dies_by_signal {
        program.expected_exit_for(release)
    } else {
        Exit::Code(VALGRIND_ERROR_EXIT)
    };
    if out.exit != Some(expected_exit) {
        problems.push(format!(
            "ended with {} under valgrind, expected {expected_exit}; stderr:\n{}",
            out.exit_text(),
            out.stderr
        ));
    }
    if !report.finished && !dies_by_signal {
        problems.push("valgrind's report is incomplete (no FINISHED status)".into());
    }
    for e in &memory_errors {
        problems.push(format!("memory error:\n{}", describe(e)));
    }
    let mut loader_records = 0;
    if !dies_by_signal {
        for leak in report.errors.iter().filter(|e| e.is_leak()) {
            match leak.kind.as_str() {
                "Leak_DefinitelyLost" | "Leak_IndirectlyLost" => {
                    problems.push(format!("leak:\n{}", describe(leak)));
                }
                _ if loader_record(&leak.stack) => loader_records += 1,
                _ => {
                    if let Some(owner) =
                        valgrind_xml::owner(&leak.stack).filter(|o| subject.is_ours(o))
                    {
                        problems.push(format!(
                            "block of {owner} alive at exit:\n{}",
                            describe(leak)
                        ));
                    }
                }
            }
        }
        if loader_records > 0 && subject.is_ours_runtime() {
            problems.extend(check_libraries_closed(&shutdown_report_path(&xml)));
        }
    }
    problems
}

/// Where a run's shutdown report goes (next to its valgrind XML).
fn shutdown_report_path(xml: &Path) -> PathBuf {
    xml.with_extension("shutdown-report.txt")
}

/// Is this block one of the dynamic loader's own records (a link map, a
/// search-path string, a version table) of an object still mapped at exit?
/// Its allocation stack starts in ld.so itself. Such records remain for
/// the libraries our runtime dlcloses during exit: clang-14 binaries call
/// `__tgt_unregister_lib` from the executable's `.fini_array`, and glibc's
/// `_dl_fini` pins every loaded object while finalizers run, so a dlclose
/// there cannot unmap anything. LLVM's runtime leaves the same records.
/// They count as the loader's only if the runtime did close every library
/// it opened: [`check_libraries_closed`] reads that from the shutdown
/// report.
fn loader_record(frames: &[valgrind_xml::Frame]) -> bool {
    frames
        .iter()
        .map(|f| f.obj.rsplit('/').next().unwrap_or(&f.obj))
        .find(|file| !file.starts_with("vgpreload_"))
        .is_some_and(|file| file.starts_with("ld-linux"))
}

/// The runtime's shutdown report must exist and show every plugin library
/// closed and nothing left unreleased.
fn check_libraries_closed(report: &Path) -> Vec<String> {
    let text = match std::fs::read_to_string(report) {
        Ok(text) => text,
        Err(e) => {
            return vec![format!(
                "ld.so records of mapped objects remain at exit, and the runtime wrote no shutdown report ({}: {e})",
                report.display()
            )]
        }
    };
    let mut problems = Vec::new();
    for line in text.lines().filter(|l| l.contains("close plugin")) {
        if !line.trim_end().ends_with(": ok") {
            problems.push(format!("the runtime did not close a plugin: {line}"));
        }
    }
    if text.contains("could not be released") {
        problems.push(format!(
            "the shutdown report lists unreleased resources:\n{text}"
        ));
    }
    problems
}

#[test]
fn every_program_is_clean_under_valgrind() {
    valgrind_suite(Release::Llvm14);
}

#[test]
fn every_clang_19_program_is_clean_under_valgrind() {
    valgrind_suite(Release::Llvm19);
}

#[test]
fn every_clang_22_program_is_clean_under_valgrind() {
    valgrind_suite(Release::Llvm22);
}

/// Every program of `release`, built by its clang, under valgrind on ours.
fn valgrind_suite(release: Release) {
    let tc = Toolchain::detect_release(release).unwrap_or_else(|e| panic!("{e}"));
    detect_valgrind().unwrap_or_else(|e| panic!("{e}"));
    let subject = subject();
    let filter = std::env::var("OMPTARGET_DIFF_FILTER").ok();
    let programs: Vec<Program> = spec::discover(&paths::programs_dir(), filter.as_deref())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|p| p.releases.contains(&release))
        .collect();
    let (skipped, programs): (Vec<Program>, Vec<Program>) =
        programs.into_iter().partition(|p| p.no_valgrind.is_some());
    if programs.is_empty() && filter.is_some() {
        eprintln!("no clang-{} program to check", release.major());
        return;
    }
    assert!(!programs.is_empty(), "no program to check");
    let results = pool::par_map(&programs, pool::jobs(), |program| {
        let problems = check_program(program, &tc, &subject);
        eprintln!(
            "  {} {}",
            if problems.is_empty() {
                "clean"
            } else {
                "DIRTY"
            },
            program.name
        );
        problems
    });
    let mut summary = format!(
        "valgrind on {}, clang-{} builds:\n",
        subject.lib_dir.display(),
        release.major()
    );
    let mut details = String::new();
    let mut dirty = 0;
    for (program, problems) in programs.iter().zip(&results) {
        if problems.is_empty() {
            summary.push_str(&format!("  clean    {}\n", program.file_name));
        } else {
            dirty += 1;
            summary.push_str(&format!("  DIRTY    {}\n", program.file_name));
            details.push_str(&format!(
                "==== {} ====\n{}\n",
                program.file_name,
                problems.join("\n")
            ));
        }
    }
    for program in &skipped {
        let reason = program.no_valgrind.as_deref().unwrap_or_default();
        summary.push_str(&format!("  skipped  {} ({reason})\n", program.file_name));
    }
    summary.push_str(&format!(
        "{} clean, {dirty} dirty, {} skipped\n",
        programs.len() - dirty,
        skipped.len()
    ));
    println!("{summary}");
    if dirty > 0 {
        panic!("{summary}\n{details}");
    }
}

/// Bytes and blocks still allocated at exit: every leak record summed.
fn in_use_at_exit(report: &Report) -> (u64, u64) {
    report
        .errors
        .iter()
        .filter(|e| e.is_leak())
        .fold((0, 0), |(bytes, blocks), e| {
            (bytes + e.leaked_bytes, blocks + e.leaked_blocks)
        })
}

#[test]
fn dlopen_loop_memory_does_not_grow() {
    let tc = Toolchain::detect().unwrap_or_else(|e| panic!("{e}"));
    detect_valgrind().unwrap_or_else(|e| panic!("{e}"));
    let subject = subject();
    let source = paths::programs_dir().join("dlopen_loop.c");
    let program = Program::parse(&source).unwrap_or_else(|e| panic!("{e}"));
    let built = build::build(&program, &tc).unwrap_or_else(|e| panic!("{e}"));
    let library = built
        .out_dir
        .join("libdlopen_kernels.so")
        .to_string_lossy()
        .into_owned();
    let counts = [10u64, 100];
    let runs = pool::par_map(&counts, 2, |n| {
        let xml = built.out_dir.join(format!("valgrind-{n}.xml"));
        let args = vec![library.clone(), n.to_string()];
        let (out, report) = run_under_valgrind(&program, &built, &args, &subject, tc.release, &xml)
            .unwrap_or_else(|e| panic!("{e}"));
        let expected_line = format!("iterations={n} ");
        // valgrind exits with VALGRIND_ERROR_EXIT for tolerated errors too.
        let only_tolerated_errors = report
            .errors
            .iter()
            .all(|e| e.is_leak() || subject.is_clang_casted_slot_artifact(e));
        let exit_ok = out.exit == Some(Exit::Code(0))
            || (only_tolerated_errors && out.exit == Some(Exit::Code(VALGRIND_ERROR_EXIT)));
        assert!(
            exit_ok && out.stdout.starts_with(&expected_line),
            "dlopen_loop {n} under valgrind: {} stdout {:?} stderr:\n{}",
            out.exit_text(),
            out.stdout,
            out.stderr
        );
        let lost: Vec<String> = report
            .errors
            .iter()
            .filter(|e| {
                if e.is_leak() {
                    matches!(
                        e.kind.as_str(),
                        "Leak_DefinitelyLost" | "Leak_IndirectlyLost"
                    )
                } else {
                    !subject.is_clang_casted_slot_artifact(e)
                }
            })
            .map(describe)
            .collect();
        assert!(
            lost.is_empty(),
            "dlopen_loop {n}: errors or lost blocks:\n{}",
            lost.join("\n")
        );
        in_use_at_exit(&report)
    });
    let ((bytes10, blocks10), (bytes100, blocks100)) = (runs[0], runs[1]);
    let extra_iterations = counts[1] - counts[0];
    println!(
        "in use at exit: {bytes10} bytes in {blocks10} blocks after 10 loads, {bytes100} bytes in {blocks100} blocks after 100"
    );
    assert!(
        bytes100 < bytes10 + extra_iterations && blocks100 < blocks10 + extra_iterations,
        "memory grows with dlopen/dlclose cycles: {bytes10} bytes / {blocks10} blocks in use at exit \
         after 10 cycles, {bytes100} bytes / {blocks100} blocks after 100 (reports in {})",
        built.out_dir.display()
    );
}
