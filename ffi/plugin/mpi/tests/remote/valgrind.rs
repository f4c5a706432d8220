//! The program rank under valgrind: 0 errors and nothing lost (nothing of
//! ours left at all), in
//! a job where it computes on 8 remote devices of 2 servers; its shutdown
//! report lists each remote step with the rank it ran on.
//!
//! Open MPI's own allocations and its PMIx thread are suppressed by
//! `tests/openmpi.supp` (each entry says why), beside Debian's
//! `openmpi-valgrind.supp` and the suite's `valgrind.supp`.
use crate::job;
use omptarget_test_support::exec::{self, Exit};
use omptarget_test_support::{stage, valgrind};
use std::path::Path;
use std::time::Duration;

#[test]
fn the_program_rank_is_valgrind_clean_and_its_report_names_each_rank() {
    let dir = tempfile::tempdir().unwrap();
    // With debug info: valgrind names the program's frames.
    let program = crate::lifecycle::build("job-g", false, &["-g"]);
    let xml = dir.path().join("valgrind.xml");
    let lib = stage::staged().lib_dir.display().to_string();
    let mut cmd = job::mpirun();
    cmd.args(["-x", &format!("LD_LIBRARY_PATH={lib}")]);
    cmd.args(["-x", "OMPTARGET_SHUTDOWN_REPORT=stderr"]);
    cmd.args(["-np", "1"]);
    under_valgrind(&mut cmd, &xml);
    cmd.arg(&program).arg("count");
    cmd.args([":", "-x", &format!("LD_LIBRARY_PATH={lib}")]);
    cmd.args(["-np", "2"]).arg(job::server());
    let out = exec::run(cmd, Duration::from_secs(300)).expect("mpirun runs");
    assert_eq!(
        out.exit,
        Some(Exit::Code(0)),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.starts_with("devices: 12\n"), "{}", out.stdout);
    let found = findings(&xml);
    assert!(found.is_empty(), "{}", found.join("\n\n"));
    // The program's report: each remote device's steps with its rank.
    for (device, rank) in [(4, 1), (11, 2)] {
        for step in ["drain memory manager", "unload images", "deinit device"] {
            let line = format!("device {device} (libomptarget.rtl.mpi.so at rank {rank} on ");
            assert!(
                out.stderr
                    .lines()
                    .any(|l| l.contains(step) && l.contains(&line)),
                "{step} on {line}: {}",
                out.stderr
            );
        }
    }
}

/// `valgrind` with the suite's options and suppressions, its XML report
/// to `xml`, as the command `cmd` runs next.
fn under_valgrind(cmd: &mut std::process::Command, xml: &Path) {
    cmd.args(["valgrind", "--num-callers=40", "--leak-check=full"]);
    cmd.arg("--show-leak-kinds=all");
    cmd.arg("--xml=yes")
        .arg(format!("--xml-file={}", xml.display()));
    for supp in [
        Path::new("/usr/share/openmpi/openmpi-valgrind.supp").to_path_buf(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openmpi.supp"),
        valgrind::suppressions(),
    ] {
        cmd.arg(format!("--suppressions={}", supp.display()));
    }
}

/// What the valgrind report at `xml` found against the suite's rules.
fn findings(xml: &Path) -> Vec<String> {
    let report = valgrind::parse(&std::fs::read_to_string(xml).unwrap());
    assert!(report.finished, "valgrind did not finish");
    // The rules of the suite's valgrind runs (tests/system/valgrind_c.rs): no
    // error; no block definitely or indirectly lost, whoever allocated it;
    // and nothing our libraries allocated still there at exit (a block
    // libomp allocates for itself, possibly lost, is libomp's).
    // The dynamic loader's records of what is still mapped at exit (Open
    // MPI stays loaded once MPI started: `mpi.rs`) are the loader's.
    let by_the_loader = |e: &valgrind::Error| {
        e.stack
            .iter()
            .find(|f| !f.obj.contains("vgpreload_"))
            .is_some_and(|f| f.obj.contains("/ld-linux"))
    };
    let ours = |e: &valgrind::Error| {
        !by_the_loader(e)
            && valgrind::owner(&e.stack).is_some_and(|obj| {
                let file = obj.rsplit('/').next().unwrap_or(obj);
                file.starts_with("libomptarget.")
            })
    };
    let found: Vec<String> = report
        .errors
        .iter()
        .filter(|e| match e.kind.as_str() {
            "Leak_DefinitelyLost" | "Leak_IndirectlyLost" => true,
            "Leak_PossiblyLost" | "Leak_StillReachable" => ours(e),
            _ => true,
        })
        .map(|e| format!("{}: {}\n{}", e.kind, e.what, e.stack_text()))
        .collect();
    found
}

/// An MPI program with servers of its own (spawned), under valgrind: its
/// `MPI_Init` answered through the GOT redirect, its collectives, its
/// `MPI_Finalize` disconnecting the servers: 0 errors, nothing lost.
#[test]
fn an_mpi_program_with_spawned_servers_is_valgrind_clean() {
    let dir = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/mpi_program.c");
    let program = crate::lifecycle::build_source(&source, "mpi_program-g", true, &["-g"]);
    let xml = dir.path().join("valgrind.xml");
    let lib = stage::staged().lib_dir.display().to_string();
    let mut cmd = job::mpirun();
    cmd.args(["-x", &format!("LD_LIBRARY_PATH={lib}")]);
    cmd.args(["-x", "OMPTARGET_MPI_SPAWN=1", "-np", "1"]);
    under_valgrind(&mut cmd, &xml);
    cmd.arg(&program).arg("init-first");
    let out = exec::run(cmd, Duration::from_secs(300)).expect("mpirun runs");
    assert_eq!(
        out.exit,
        Some(Exit::Code(0)),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        out.stdout, "rank 0 of 1: devices 8, sums 98280 98280, world sum 1, ring from 0\n",
        "{}",
        out.stderr
    );
    let found = findings(&xml);
    assert!(found.is_empty(), "{}", found.join("\n\n"));
}
