//! The `omptarget` command on real clang-14 programs (the C programs of
//! `ffi/program/shim/tests/c`), with the libraries `cargo xtask stage` puts in
//! `target/omptarget/lib`, which the binary finds from its own location.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const OMPTARGET: &str = env!("CARGO_BIN_EXE_omptarget");

fn repo() -> PathBuf {
    // bin/omptarget -> the repository's root.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn c_source(name: &str) -> PathBuf {
    repo().join("ffi/program/shim/tests/c").join(name)
}

/// The staged host plugin (`cargo xtask stage` made it).
fn staged_host_plugin() -> PathBuf {
    let exe = Path::new(OMPTARGET).canonicalize().unwrap();
    let lib = exe.parent().unwrap().join("../omptarget/lib");
    let plugin = lib.join("libomptarget.rtl.x86_64.so");
    assert!(
        plugin.is_file(),
        "run `cargo xtask stage` first: {} is missing",
        plugin.display()
    );
    plugin
}

/// `omptarget ARGS` in `dir`, without inherited offload settings.
fn omptarget(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(OMPTARGET);
    cmd.current_dir(dir).args(args);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("LIBOMPTARGET_")
            || key.starts_with("OMPTARGET_")
            || key.starts_with("OMP_")
        {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("running omptarget")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Compile a C program of `ffi/program/shim/tests/c` with clang-14 for x86_64 offload.
fn clang14(dir: &Path, source: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(source.trim_end_matches(".c"));
    let status = Command::new("clang-14")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1"])
        .args(extra)
        .arg(c_source(source))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-14 (cargo xtask deps installs it)");
    assert!(status.success());
    out
}

fn line_of(source: &str, marker: &str) -> usize {
    std::fs::read_to_string(c_source(source))
        .unwrap()
        .lines()
        .position(|l| l.contains(marker))
        .unwrap()
        + 1
}

#[test]
fn info_lists_every_plugin_tried_and_every_device() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = format!(
        "{}:/nonexistent/libomptarget.rtl.none.so",
        staged_host_plugin().display()
    );
    let env = [
        ("OMPTARGET_PLUGINS", plugins.as_str()),
        ("OMPTARGET_HOST_DEVICES", "2"),
    ];
    let out = omptarget(dir.path(), &["info", "--json"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugins = info["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 2, "{info}");
    assert_eq!(plugins[0]["name"], "libomptarget.rtl.x86_64.so");
    assert_eq!(plugins[0]["loaded"], true);
    assert_eq!(plugins[0]["devices"], 2);
    assert_eq!(plugins[1]["loaded"], false);
    assert!(
        plugins[1]["why"]
            .as_str()
            .unwrap()
            .starts_with("cannot open"),
        "{info}"
    );
    let devices = info["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    for (i, d) in devices.iter().enumerate() {
        assert_eq!(d["id"], i);
        assert_eq!(d["initialised"], true, "{d}");
        assert_eq!(d["plugin_device"], i);
        assert_eq!(d["memory_manager_threshold"], 8192);
    }
    assert_eq!(devices[0]["direct_copy_to"], serde_json::json!([1]));

    let out = omptarget(dir.path(), &["info"], &env);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("plugins (2 tried):\n  loaded   "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  skipped  /nonexistent/libomptarget.rtl.none.so: cannot open"),
        "{stdout}"
    );
    // The device's name follows in parentheses where the plugin knows it.
    assert!(
        stdout.contains("devices (2):\n  device 0: libomptarget.rtl.x86_64.so device 0")
            && stdout.contains("device 0")
            && stdout
                .lines()
                .any(|l| l.starts_with("  device 0: ") && l.contains(", ready;")),
        "{stdout}"
    );
}

#[test]
fn info_without_a_variable_tries_the_plugins_next_to_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    let out = omptarget(dir.path(), &["info", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tried = info["plugins_tried"].as_array().unwrap();
    assert!(
        tried.iter().any(|p| p
            .as_str()
            .unwrap()
            .ends_with("/omptarget/lib/libomptarget.rtl.x86_64.so")),
        "{info}"
    );
    assert_eq!(info["devices"].as_array().unwrap().len(), 4, "{info}");
}

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

#[test]
fn an_interrupt_leaves_the_program_to_decide_and_run_returns_its_status() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    // The program ignores SIGINT; `omptarget` gets one and passes it on.
    // The program says it runs (`started`: `omptarget` blocked the
    // signal before it spawned the program) and then waits for `go`, which the test writes after
    // the signal: the order is fixed by files, not by a sleep.
    let mut child = Command::new(OMPTARGET)
        .current_dir(dir.path())
        .args([
            "run",
            "--",
            "sh",
            "-c",
            "trap '' INT; : > started; while [ ! -e go ]; do sleep 0.01; done; exit 4",
        ])
        .spawn()
        .unwrap();
    while !dir.path().join("started").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("omptarget ended before the program started: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signals our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    std::fs::write(dir.path().join("go"), "").unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(4));
}

/// `path`'s contents once the program has written them (it writes a file
/// beside it and renames it, so it is never read half written), or a
/// panic if `tool` ended first.
fn wait_for_file(tool: &mut std::process::Child, path: &Path) -> String {
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        if let Some(status) = tool.try_wait().unwrap() {
            panic!("omptarget ended before the program started: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A process of the job: its pid and start time (`/proc/PID/stat` field
/// 22), so that a reused pid is not taken for it.
fn process(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    if fields.next()? == "Z" {
        return None;
    }
    Some((pid, fields.nth(18)?.parse().ok()?))
}

fn still_running(p: (i32, u64)) -> bool {
    process(p.0) == Some(p)
}

/// The children of `pid`, as [`process`] gives them.
fn children_of(pid: u32) -> Vec<(i32, u64)> {
    let Ok(list) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) else {
        return Vec::new();
    };
    list.split_whitespace()
        .filter_map(|p| process(p.parse().ok()?))
        .collect()
}

/// SIGTERM or SIGHUP sent to `omptarget run` alone (as `kill`, batch
/// systems and `timeout` do) reaches the program, and `run` returns the
/// program's status: 128 + the signal, as the program died of it.
#[test]
fn sigterm_and_sighup_to_run_end_the_program_and_return_its_status() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let mut tool = Command::new(OMPTARGET)
            .current_dir(dir.path())
            .args(["run", "--", "sh", "-c"])
            .arg("echo $$ > pid.new; mv pid.new pid; exec sleep 600")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid: i32 = wait_for_file(&mut tool, &dir.path().join("pid"))
            .trim()
            .parse()
            .unwrap();
        let program = process(pid).expect("the program runs");
        // SAFETY: signals our own child process.
        assert_eq!(unsafe { libc::kill(tool.id() as i32, signal) }, 0);
        let out = tool.wait_with_output().unwrap();
        if still_running(program) {
            // SAFETY: our own test's program, left behind by the failure.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!(
                "signal {signal}: the program outlived omptarget ({:?})",
                out.status
            );
        }
        assert_eq!(
            out.status.code(),
            Some(128 + signal),
            "{}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(&format!("sh was killed by signal {signal}")),
            "{}",
            text(&out.stderr)
        );
        std::fs::remove_file(dir.path().join("pid")).unwrap();
    }
}

/// SIGTERM to `omptarget run --mpi 2` ends the whole job: `mpirun`, the
/// program and both servers are gone when `run` returns, and `run`
/// returns `mpirun`'s status (it did not die of the signal itself).
#[test]
fn sigterm_to_run_mpi_leaves_no_process_of_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let mut tool = Command::new(OMPTARGET)
        .current_dir(dir.path())
        .args(["run", "--mpi", "2", "--", "sh", "-c"])
        .arg("echo $$ > pid.new; mv pid.new pid; exec sleep 600")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let program: i32 = wait_for_file(&mut tool, &dir.path().join("pid"))
        .trim()
        .parse()
        .unwrap();
    let program = process(program).expect("the program runs");
    // mpirun, and its three ranks: the program's (which runs the program)
    // and two servers.
    let job = loop {
        let mpirun = children_of(tool.id());
        let ranks: Vec<_> = mpirun
            .iter()
            .flat_map(|&(pid, _)| children_of(pid as u32))
            .collect();
        if mpirun.len() == 1 && ranks.len() == 3 {
            break [mpirun, ranks, vec![program]].concat();
        }
        if let Some(status) = tool.try_wait().unwrap() {
            panic!("omptarget ended before the job started: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SAFETY: signals our own child process.
    assert_eq!(unsafe { libc::kill(tool.id() as i32, libc::SIGTERM) }, 0);
    let out = tool.wait_with_output().unwrap();
    let left: Vec<_> = job.iter().copied().filter(|&p| still_running(p)).collect();
    assert_job_ended_and_failed(left, &out);
}

/// Running processes whose environment holds `OMPTARGET_TEST_JOB=tag`:
/// everything a job started with it in its environment (`mpirun`, every
/// rank, the program) still running.
fn processes_of_job(tag: &str) -> Vec<(i32, u64)> {
    let marker = format!("OMPTARGET_TEST_JOB={tag}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|v| v == marker.as_bytes())
                .then_some(())?;
            process(pid)
        })
        .collect()
}

/// A program that never starts the offload runtime (so never joins the
/// MPI job the servers wait in) ends its `run --mpi N` job with its own
/// status, and nothing of the job is left running: the program's rank
/// joins in its place once it ended. (Without that, the servers wait in
/// `MPI_Init_thread` for ever; a job still running after `JOB_LIMIT` is
/// ended and the test fails.)
#[test]
fn run_mpi_of_a_program_that_never_offloads_ends_with_its_status() {
    const JOB_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], i32); 2] =
        [("1", &["/bin/true"], 0), ("2", &["sh", "-c", "exit 3"], 3)];
    for (servers, program, code) in cases {
        let tag = format!("never-offloads-{}-{servers}", std::process::id());
        let mut tool = Command::new(OMPTARGET)
            .current_dir(dir.path())
            .args(["run", "--mpi", servers, "--"])
            .args(program)
            .env("OMPTARGET_TEST_JOB", &tag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = tool.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > JOB_LIMIT {
                // SAFETY: signals our own child process (it ends the job).
                unsafe { libc::kill(tool.id() as i32, libc::SIGTERM) };
                let ended = tool.wait().unwrap();
                panic!("--mpi {servers} -- {program:?} still ran after {JOB_LIMIT:?} ({ended:?})");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let left = processes_of_job(&tag);
        kill_left(&left);
        assert!(left.is_empty(), "{program:?}: left running: {left:?}");
        assert_eq!(status.code(), Some(code), "--mpi {servers} -- {program:?}");
    }
}

/// The program's rank killed by SIGKILL (as `mpirun` ends a rank that
/// outlives its SIGTERM) takes the program with it: nothing of the job is
/// left running, and `run` fails.
#[test]
fn a_killed_program_rank_takes_the_program_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("rank-killed-{}", std::process::id());
    let mut tool = Command::new(OMPTARGET)
        .current_dir(dir.path())
        .args(["run", "--mpi", "1", "--", "sh", "-c"])
        .arg("echo $$ > pid.new; mv pid.new pid; exec sleep 600")
        .env("OMPTARGET_TEST_JOB", &tag)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let program: i32 = wait_for_file(&mut tool, &dir.path().join("pid"))
        .trim()
        .parse()
        .unwrap();
    let rank = std::fs::read_to_string(format!("/proc/{program}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 1..];
            rest.split_whitespace().nth(1)?.parse::<i32>().ok()
        })
        .expect("the program's parent");
    let cmdline = std::fs::read(format!("/proc/{rank}/cmdline")).unwrap();
    assert!(
        cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == b"mpi-program-rank"),
        "the program's parent is not the program's rank: {}",
        text(&cmdline)
    );
    // SAFETY: a process of our own test's job.
    assert_eq!(unsafe { libc::kill(rank, libc::SIGKILL) }, 0);
    let out = tool.wait_with_output().unwrap();
    assert_job_ended_and_failed(processes_of_job(&tag), &out);
}

/// Nothing of the job is `left` (killed if anything is, so that a failure
/// leaves no process behind), and `run` failed.
fn assert_job_ended_and_failed(left: Vec<(i32, u64)>, out: &std::process::Output) {
    kill_left(&left);
    assert!(left.is_empty(), "left running: {left:?} ({:?})", out.status);
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
}

/// SIGKILL what a failed test left running.
fn kill_left(left: &[(i32, u64)]) {
    for &(pid, _) in left {
        // SAFETY: our own test's processes, left behind by the failure.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// A server count the machine cannot start is refused before `mpirun`
/// tries (it would spend minutes on it), saying the bound and why.
#[test]
fn run_mpi_refuses_a_count_the_machine_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "100000", "--", "/bin/true"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("omptarget: error: --mpi 100000: this machine can start at most ")
            && stderr.contains(" device servers (")
            && stderr.contains(" per "),
        "{stderr}"
    );
}

/// `target/omptarget/llvm-releases/root/usr/lib/llvm-N/lib`: LLVM N's
/// runtime, unpacked by `cargo xtask deps` (its libomp, omp.h and
/// link-time libraries), or `None` (skipped locally, a failure in CI).
fn release_lib_dir(major: u32) -> Option<PathBuf> {
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

/// `ffi/plugin/mpi/tests/c/job.c` (one program rank of an MPI job) built
/// by clang-14.
fn mpi_job_program(dir: &Path) -> PathBuf {
    let out = dir.join("job");
    let status = Command::new("clang-14")
        .args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-O1"])
        .arg(repo().join("ffi/plugin/mpi/tests/c/job.c"))
        .args(["-lpthread", "-o"])
        .arg(&out)
        .status()
        .expect("clang-14 (cargo xtask deps installs it)");
    assert!(status.success());
    out
}

/// `omptarget run --mpi 2`: the program and two device servers (4 host
/// devices each) in one mpirun job. Every device computes; the program's
/// status, the shutdown reports (the program's and each server's, with
/// its rank), the leak report and the profile (one file per rank) all
/// come through.
#[test]
fn run_mpi_starts_the_servers_and_keeps_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let program = mpi_job_program(dir.path());
    let profile = dir.path().join("trace.json");
    let out = omptarget(
        dir.path(),
        &[
            "run",
            "--mpi",
            "2",
            "--report",
            "--leak-report",
            "--profile",
            profile.to_str().unwrap(),
            "--",
            program.to_str().unwrap(),
            "count",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // 4 local devices, then 2 x 4 remote ones; each sums 0..4096 % 7.
    let mut expected = String::from("devices: 12\n");
    for d in 0..12 {
        expected += &format!("device {d}: 12285\n");
    }
    assert_eq!(stdout, expected, "{stderr}");
    for rank in [1, 2] {
        assert!(
            stderr.contains(&format!("omptarget-mpi-device rank {rank} on ")),
            "rank {rank}'s shutdown report: {stderr}"
        );
        let server_profile = dir.path().join(format!("trace.json.rank{rank}"));
        assert!(server_profile.is_file(), "rank {rank}'s profile: {stderr}");
    }
    assert!(profile.is_file(), "the program's profile: {stderr}");
    // The program's report names each remote device's rank: devices 4-7
    // are rank 1's, 8-11 rank 2's.
    for (device, rank) in [(4, 1), (7, 1), (8, 2), (11, 2)] {
        let step = format!(
            "deinit device          device {device} (libomptarget.rtl.mpi.so at rank {rank} on "
        );
        assert!(stderr.contains(&step), "{step}: {stderr}");
    }
    assert!(
        stderr.contains("omptarget leak report: no leaks"),
        "{stderr}"
    );
}

/// The program's exit status passes through mpirun and the tool: `exit(4)`
/// after offloading to a remote device.
#[test]
fn run_mpi_returns_the_programs_status() {
    let dir = tempfile::tempdir().unwrap();
    let program = mpi_job_program(dir.path());
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "1", "--", program.to_str().unwrap(), "exit"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "last device: 12285\n");
}

/// `omptarget info` in an MPI job lists each remote device after the local
/// ones, with the rank and host that serve it.
#[test]
fn info_in_an_mpi_job_lists_remote_devices_with_rank_and_host() {
    let dir = tempfile::tempdir().unwrap();
    let out = omptarget(
        dir.path(),
        &["run", "--mpi", "1", "--", OMPTARGET, "info"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let devices: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  device "))
        .collect();
    assert_eq!(devices.len(), 8, "{stdout}");
    for (id, line) in devices.iter().enumerate() {
        let plugin = if id < 4 { "x86_64" } else { "mpi" };
        let head = format!(
            "  device {id}: libomptarget.rtl.{plugin}.so device {} (",
            id % 4
        );
        assert!(line.starts_with(&head), "{line}");
        if id >= 4 {
            assert!(
                line.contains("(rank 1 on ") && line.contains(&format!(", device {} of ", id - 4)),
                "{line}"
            );
        }
    }
}
