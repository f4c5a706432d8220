//! `omptarget run`: arguments and status, the leak report, the profile, clang 19 and 22 binaries.

use super::*;

#[test]
fn run_with_leak_report_names_each_leak_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    let program = clang14(dir.path(), "leaky.c", &["-g"]);
    let program = program.to_str().unwrap();
    let out = omptarget(dir.path(), &["run", "--leak-report", "--", program], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(text(&out.stdout).contains("sum=499500\n"));
    assert!(stderr.starts_with("omptarget leak report: LEAKS: 1 allocations never freed, 1 mappings never released, 12096 bytes\n"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "allocated at leak_a_block at {}:{}\n",
            c_source("leaky.c").display(),
            line_of("leaky.c", "LEAK_ALLOC")
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "allocated at map_and_forget at {}:{}\n",
            c_source("leaky.c").display(),
            line_of("leaky.c", "LEAK_MAP")
        )),
        "{stderr}"
    );

    // The same program leaking nothing: the program's status, 0.
    let out = omptarget(
        dir.path(),
        &["run", "--leak-report", "--", program, "clean"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "omptarget leak report: no leaks\n  the runtime freed 0 allocations (0 bytes) the program still held\n"
    );
}

#[test]
fn run_passes_arguments_and_returns_the_programs_status() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    // A program that never offloads has no runtime, hence no report.
    let out = omptarget(
        dir.path(),
        &[
            "run",
            "--leak-report",
            "--",
            "sh",
            "-c",
            "echo $LD_LIBRARY_PATH; exit 7",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(7));
    assert!(
        text(&out.stdout).contains("/omptarget/lib"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("no leak report: sh never started the offload runtime"));
    let out = omptarget(dir.path(), &["run", "--", "/nonexistent/program"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("omptarget: error: cannot run /nonexistent/program: "));
    let out = omptarget(dir.path(), &["run"], &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap refuses a run without a program"
    );
}

#[test]
fn run_with_profile_writes_a_trace_that_profile_summarises() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    let program = clang14(dir.path(), "profiled.c", &[]);
    let out = omptarget(
        dir.path(),
        &[
            "run",
            "--profile",
            "trace.json",
            "--report",
            "--",
            program.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with("omptarget shutdown: "),
        "{}",
        text(&out.stderr)
    );
    let trace = dir.path().join("trace.json");
    assert!(trace.is_file());
    let out = omptarget(dir.path(), &["profile", "trace.json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let line = line_of("profiled.c", "omp target teams");
    assert!(table.contains(&format!("_main_l{line}\n")), "{table}");
    assert!(
        table.contains("  host to device            1           4096"),
        "{table}"
    );
    assert!(
        table.contains("  device to host            2           8192"),
        "{table}"
    );
    assert!(
        table.contains("  2 allocations, 4352 bytes; 2 frees, 4352 bytes; largest 4096 bytes\n"),
        "{table}"
    );
    for kind in [
        "registration",
        "mapping",
        "launch",
        "alloc",
        "free",
        "teardown",
        "plugin",
    ] {
        assert!(
            table.contains(&format!("\n  {kind:<14} ")),
            "{kind}: {table}"
        );
    }

    std::fs::write(dir.path().join("bad.json"), "{").unwrap();
    let out = omptarget(dir.path(), &["profile", "bad.json"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.json is not a JSON trace"),
        "{}",
        text(&out.stderr)
    );
}

/// `target/omptarget/llvm-releases/root/usr/lib/llvm-N/lib`: LLVM N's
/// runtime, unpacked by `cargo xtask deps` (its libomp, omp.h and
/// link-time libraries), or `None` (skipped locally, a failure in CI).
pub(crate) fn release_lib_dir(major: u32) -> Option<PathBuf> {
    let exe = Path::new(OMPTARGET).canonicalize().unwrap();
    let target = exe.parent().unwrap().parent().unwrap();
    let dir = target.join(format!(
        "omptarget/llvm-releases/root/usr/lib/llvm-{major}/lib"
    ));
    if dir.join("libomp.so.5").exists() {
        return Some(dir);
    }
    let why = format!("{} is missing (cargo xtask deps unpacks it)", dir.display());
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

#[test]
fn run_serves_clang_19_and_22_binaries_with_their_reports() {
    for major in [19, 22] {
        let Some(release_lib) = release_lib_dir(major) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join(format!("leaky{major}"));
        let include = release_lib.join(format!("clang/{major}/include"));
        let status = Command::new(format!("clang-{major}"))
            .args([
                "-fopenmp",
                "-fopenmp-targets=x86_64-pc-linux-gnu",
                "-O1",
                "-g",
            ])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-L{}", release_lib.display()))
            .arg(c_source("leaky.c"))
            .arg("-o")
            .arg(&program)
            .status()
            .expect("clang (cargo xtask deps installs it)");
        assert!(status.success());
        // The release's libomp.so.5 from where it was unpacked (a system
        // with libomp-N-dev finds it through the binary's RUNPATH).
        let library_path = release_lib.display().to_string();
        let out = omptarget(
            dir.path(),
            &[
                "run",
                "--leak-report",
                "--profile",
                "trace.json",
                "--",
                program.to_str().unwrap(),
            ],
            &[("LD_LIBRARY_PATH", &library_path), ("LD_DEBUG", "libs")],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "clang-{major}: {stderr}");
        assert!(text(&out.stdout).contains("sum=499500\n"), "clang-{major}");
        // Our runtime, under the name this release's binaries ask for.
        let ours = staged_host_plugin()
            .parent()
            .unwrap()
            .canonicalize()
            .unwrap();
        assert!(
            stderr.contains(&format!(
                "calling init: {}/libomptarget.so.{major}.1",
                ours.display()
            )),
            "clang-{major}: {stderr}"
        );
        assert!(stderr.contains("omptarget leak report: LEAKS: 1 allocations never freed, 1 mappings never released, 12096 bytes\n"), "clang-{major}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "allocated at leak_a_block at {}:{}\n",
                c_source("leaky.c").display(),
                line_of("leaky.c", "LEAK_ALLOC")
            )),
            "clang-{major}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "allocated at map_and_forget at {}:{}\n",
                c_source("leaky.c").display(),
                line_of("leaky.c", "LEAK_MAP")
            )),
            "clang-{major}: {stderr}"
        );
        let trace: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("trace.json")).unwrap()).unwrap();
        let launches = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["cat"] == "launch"
                    && e["name"]
                        .as_str()
                        .unwrap()
                        .starts_with("launch __omp_offloading_")
            })
            .count();
        assert_eq!(launches, 1, "clang-{major}: {trace}");
    }
}
