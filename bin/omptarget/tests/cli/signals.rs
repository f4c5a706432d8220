//! Signals to `omptarget run`: the program decides, and run returns its status; the process helpers the signal and MPI tests share.

use super::*;

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
pub(crate) fn wait_for_file(tool: &mut std::process::Child, path: &Path) -> String {
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
pub(crate) fn process(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    if fields.next()? == "Z" {
        return None;
    }
    Some((pid, fields.nth(18)?.parse().ok()?))
}

pub(crate) fn still_running(p: (i32, u64)) -> bool {
    process(p.0) == Some(p)
}

/// The children of `pid`, as [`process`] gives them.
pub(crate) fn children_of(pid: u32) -> Vec<(i32, u64)> {
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
