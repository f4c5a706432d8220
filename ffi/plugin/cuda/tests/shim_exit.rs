//! The seed scenario through `libomptarget.so`: a C program registers an
//! nvptx image, maps data, allocates device memory and calls `exit()` with
//! all of it live (`tests/fake_cuda/seed.c`). The shim's teardown at exit
//! must release everything through the CUDA plugin, in order, and never
//! call into a context after its last release; with the driver already
//! gone it must report and exit 0. Also: a clang-14 program runs on the
//! host plugin with the CUDA plugin staged beside it and no driver.
use omptarget_test_support::cuda;
use omptarget_test_support::cuda::{first, log_lines};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build seed.c against the staged libomptarget.so, once per test process
/// (two tests building the same path at once made one run a file the
/// other's `cc` was still writing: ETXTBSY); returns the program.
fn seed_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_seed_program).clone()
}

fn build_seed_program() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("seed");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cuda/seed.c");
    let status = Command::new("cc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(
            omptarget_test_support::staged()
                .lib_dir
                .as_path()
                .join("libomptarget.so"),
        )
        .arg("-ldl")
        .status()
        .expect("running cc");
    assert!(status.success(), "building seed.c failed");
    let image = dir.join("image.cubin");
    std::fs::write(&image, cuda::test_cubin(90)).unwrap();
    exe
}

fn run_seed(mode: &str, log: &Path) -> std::process::Output {
    let exe = seed_program();
    let image = exe.with_file_name("image.cubin");
    let path = format!(
        "{}:{}",
        cuda::fake_driver_dir(&[]).display(),
        omptarget_test_support::staged().lib_dir.as_path().display()
    );
    Command::new(&exe)
        .arg(&image)
        .args((!mode.is_empty()).then_some(mode))
        .env("LD_LIBRARY_PATH", path)
        .env("FAKE_CUDA_LOG", log)
        .env("OMPTARGET_SHUTDOWN_REPORT", "1")
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("OMPTARGET_PLUGINS")
        .output()
        .expect("running seed")
}

#[test]
fn exit_with_live_device_memory_frees_it_all_before_the_context_goes() {
    let log = cuda::log_path("seed");
    let out = run_seed("", &log);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("devices 1") && stdout.contains("live yes"),
        "{stdout}"
    );
    let lines = log_lines(&log);
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    // The mapping's block, the live block and the cached one went back
    // through cuMemFree, all before the context was destroyed.
    let destroyed = first(&lines, "CONTEXT_DESTROYED 0").expect("the context was released");
    let frees = lines[..destroyed]
        .iter()
        .filter(|l| l.starts_with("cuMemFree_v2"))
        .count();
    assert_eq!(frees, 3, "{lines:#?}");
    assert!(first(&lines, "cuModuleUnload").unwrap() < destroyed);
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0",
        "{lines:#?}"
    );
    // The report says what the program left.
    assert!(stderr.contains("deinit device"), "{stderr}");
    assert!(stderr.contains("1024 bytes"), "{stderr}");
}

#[test]
fn exit_after_the_driver_is_gone_reports_and_exits_0() {
    let log = cuda::log_path("seed-gone");
    let out = run_seed("driver-gone", &log);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines = log_lines(&log);
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    assert!(
        stderr.contains("CUDA_ERROR_DEINITIALIZED"),
        "the failure is reported: {stderr}"
    );
}

#[test]
fn a_clang_14_program_runs_on_the_host_plugin_beside_a_cuda_plugin_without_a_driver() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("c14-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("saxpy");
    let src = omptarget_test_support::paths::workspace_root().join("examples/c/saxpy_offload.c");
    let status = Command::new("clang-14")
        .args([
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-O1",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        _ if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: clang-14 cannot build {}", src.display());
            return;
        }
        other => panic!("clang-14 failed: {other:?}"),
    }
    let path = format!(
        "{}:{}",
        cuda::empty_dir().display(),
        omptarget_test_support::staged().lib_dir.as_path().display()
    );
    let run = |report: bool| {
        let mut cmd = Command::new(&exe);
        cmd.env("LD_LIBRARY_PATH", &path)
            .env_remove("LIBOMPTARGET_DEBUG")
            .env_remove("OMPTARGET_PLUGIN_DEBUG")
            .env_remove("OMPTARGET_PLUGINS")
            .env_remove("OMPTARGET_SHUTDOWN_REPORT");
        if report {
            cmd.env("OMPTARGET_SHUTDOWN_REPORT", "1");
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains("device 3: saxpy") && stdout.ends_with("ok\n"),
            "{stdout}"
        );
        stderr
    };
    // Not a word from the CUDA plugin without a driver...
    let quiet = run(false);
    assert!(quiet.is_empty(), "printed: {quiet}");
    // ...though it was loaded and closed: the report lists it as skipped.
    let report = run(true);
    assert!(
        report
            .contains("libomptarget.rtl.cuda.so: reports 0 devices; deinit_plugin: ok; close: ok"),
        "{report}"
    );
    // The plugin looks for the driver under its Linux names only, not
    // under cudarc's 34 candidates (each a search of every library folder:
    // ~2 ms of a short process's start; BENCHMARKS.md).
    let out = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &path)
        .env("LD_DEBUG", "libs")
        .env_remove("OMPTARGET_PLUGINS")
        .output()
        .unwrap();
    assert!(out.status.success());
    let loader_log = String::from_utf8_lossy(&out.stderr);
    let mut searched: Vec<&str> = loader_log
        .lines()
        .filter_map(|l| l.split("find library=").nth(1))
        .filter_map(|l| l.split(' ').next())
        .filter(|name| name.contains("cuda") && !name.contains("omptarget"))
        .collect();
    searched.sort_unstable();
    searched.dedup();
    assert_eq!(searched, ["libcuda.so", "libcuda.so.1"], "{loader_log}");
}

/// `scripts/gpu/offload_check.c` as `scripts/gpu-build.sh` builds it
/// (clang-19, `--offload-arch=sm_90`; kept as the fixture
/// `tests/fixtures/offload_check_clang19_sm90`), on the staged runtime
/// through the fake driver: registration of a clang-19 binary, its
/// OffloadBinary image, every kernel launched (the reduction with a launch
/// environment), and `exit()` with device memory live, all without
/// breaking a driver rule. The fake runs no kernel, so the program's
/// results are not checked here (gpu-check.sh does on a GPU). It needs
/// LLVM 19's `libomp.so.5`, which `cargo xtask deps` unpacks.
#[test]
fn a_clang_19_program_runs_through_the_fake_driver() {
    let exe =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/offload_check_clang19_sm90");
    let llvm19 = omptarget_test_support::staged()
        .lib_dir
        .as_path()
        .parent()
        .unwrap()
        .join("llvm-releases/root/usr/lib/llvm-19/lib");
    if !llvm19.join("libomp.so.5").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} lacks libomp.so.5: run cargo xtask deps",
            llvm19.display()
        );
        eprintln!("skipped: no LLVM 19 libomp (cargo xtask deps unpacks it)");
        return;
    }
    let log = cuda::log_path("clang19-program");
    let path = format!(
        "{}:{}:{}",
        cuda::fake_driver_dir(&[]).display(),
        omptarget_test_support::staged().lib_dir.as_path().display(),
        llvm19.display()
    );
    let out = Command::new(&exe)
        .arg("leak")
        .env("LD_LIBRARY_PATH", path)
        .env("FAKE_CUDA_LOG", &log)
        .env_remove("OMPTARGET_PLUGINS")
        .env_remove("LIBOMPTARGET_DEBUG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("# ran on the initial device: 0"),
        "{stdout}"
    );
    let lines = log_lines(&log);
    assert!(
        !lines.iter().any(|l| l.starts_with("VIOLATION")),
        "{lines:#?}"
    );
    let launches: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("cuLaunchKernel"))
        .collect();
    assert!(launches.len() >= 6, "{launches:#?}");
    // Exactly one kernel has a cross-team reduction: a real launch
    // environment; every other gets the all-ones pointer.
    let with_env = launches
        .iter()
        .filter(|l| !l.ends_with("arg0=0xffffffffffffffff"))
        .count();
    assert_eq!(with_env, 1, "{launches:#?}");
    assert_eq!(
        lines.last().unwrap(),
        "EXIT contexts=0 allocations=0 modules=0 streams=0 events=0"
    );
}
