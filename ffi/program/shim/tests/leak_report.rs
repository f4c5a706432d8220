//! `OMPTARGET_LEAK_REPORT`: a clang-14 program compiled with `-g` that
//! leaks on purpose gets a report naming each leak, its size and host
//! range, and the source line of the call that made it.

use omptarget_test_support::{clang::clang, clang::OFFLOAD, paths::shim_c_source, Run, Scratch};

/// The line of `ffi/program/shim/tests/c/leaky.c` that carries `marker`.
fn line_of(marker: &str) -> usize {
    let source = std::fs::read_to_string(shim_c_source("leaky.c")).unwrap();
    source
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{marker} is not in leaky.c"))
        + 1
}

fn build(scratch: &Scratch) -> std::path::PathBuf {
    let program = scratch.join("leaky");
    let mut flags = OFFLOAD.to_vec();
    flags.push("-g");
    clang(&["leaky.c"], &program, &flags, &[]);
    program
}

#[test]
fn every_leak_is_listed_with_its_size_host_range_and_source_line() {
    let scratch = Scratch::new("leak-report");
    let program = build(&scratch);
    let report_path = scratch.join("leaks.txt");
    let out = Run::new(&scratch, &program)
        .env("OMPTARGET_LEAK_REPORT", &report_path)
        .run();
    out.assert_success();
    assert_eq!(out.value("sum"), "499500", "{out}");
    let report = std::fs::read_to_string(&report_path).expect("the leak report file");
    let mut lines = report.lines();
    assert_eq!(
        lines.next(),
        Some("omptarget leak report: LEAKS: 1 allocations never freed, 1 mappings never released, 12096 bytes"),
        "{report}"
    );
    let lost = out.value("lost");
    let kept = usize::from_str_radix(out.value("kept").trim_start_matches("0x"), 16).unwrap();
    let alloc = format!("    device 0: allocation {lost}, 4096 bytes (Default) never freed");
    let map = format!(
        "    device 0: mapping of host {kept:#x}..{:#x} (8000 bytes) -> ",
        kept + 8000
    );
    let alloc_at = report
        .lines()
        .position(|l| l == alloc)
        .unwrap_or_else(|| panic!("{alloc}\n{report}"));
    let map_at = report
        .lines()
        .position(|l| l.starts_with(&map) && l.ends_with("never released (refcount 1, hold 0)"))
        .unwrap_or_else(|| panic!("{map}\n{report}"));
    let lines: Vec<&str> = report.lines().collect();
    // Each one's next line is where it was allocated: the function, the
    // C file and the marked line, from the program's debug info.
    let alloc_line = format!("leaky.c:{}", line_of("LEAK_ALLOC"));
    assert!(
        lines[alloc_at + 1].starts_with("        allocated at leak_a_block at ")
            && lines[alloc_at + 1].ends_with(&alloc_line),
        "{alloc_line}\n{report}"
    );
    let map_line = format!("leaky.c:{}", line_of("LEAK_MAP"));
    assert!(
        lines[map_at + 1].starts_with("        allocated at map_and_forget at ")
            && lines[map_at + 1].ends_with(&map_line),
        "{map_line}\n{report}"
    );
    // The runtime freed both for the program: 4096 + 8000 bytes.
    assert_eq!(
        lines.last(),
        Some(&"  the runtime freed 2 allocations (12096 bytes) the program still held"),
        "{report}"
    );
}

#[test]
fn a_program_that_frees_everything_has_no_leaks() {
    let scratch = Scratch::new("leak-report-clean");
    let program = build(&scratch);
    let out = Run::new(&scratch, &program)
        .arg("clean")
        .env("OMPTARGET_LEAK_REPORT", "stderr")
        .run();
    out.assert_success();
    assert_eq!(
        out.stderr,
        "omptarget leak report: no leaks\n  the runtime freed 0 allocations (0 bytes) the program still held\n",
        "{out}"
    );
}
