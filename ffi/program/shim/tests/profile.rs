//! `LIBOMPTARGET_PROFILE`: the Chrome trace of a real clang-14 program,
//! parsed back: its events, their nesting (each operation contains the
//! plugin call beneath it) and the bytes it moved.

use omptarget_test_support::{clang::clang, clang::OFFLOAD, Run, Scratch};
use serde_json::Value;

/// One complete event of the trace.
#[derive(Debug)]
struct Ev {
    cat: String,
    name: String,
    ts: f64,
    dur: f64,
    tid: i64,
    bytes: Option<u64>,
}

impl Ev {
    fn contains(&self, other: &Ev) -> bool {
        self.tid == other.tid && self.ts <= other.ts && other.ts + other.dur <= self.ts + self.dur
    }
}

fn run_profiled(label: &str, args: &[&str]) -> (omptarget_test_support::Outcome, Vec<Ev>) {
    let scratch = Scratch::new(label);
    let program = scratch.join("profiled");
    clang(&["profiled.c"], &program, OFFLOAD, &[]);
    let path = scratch.join("profile.json");
    let mut run = Run::new(&scratch, &program).env("LIBOMPTARGET_PROFILE", &path);
    for arg in args {
        run = run.arg(arg);
    }
    let out = run.run();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no profile: {e}\n{out}"));
    let json: Value = serde_json::from_str(&text).expect("the profile is JSON");
    let events = json["traceEvents"]
        .as_array()
        .expect("a traceEvents array")
        .iter()
        .map(|e| {
            assert_eq!(e["ph"], "X", "{e}");
            assert!(e["pid"].is_u64(), "{e}");
            Ev {
                cat: e["cat"].as_str().unwrap().to_owned(),
                name: e["name"].as_str().unwrap().to_owned(),
                ts: e["ts"].as_f64().unwrap(),
                dur: e["dur"].as_f64().unwrap(),
                tid: e["tid"].as_i64().unwrap(),
                bytes: e["args"]["bytes"].as_u64(),
            }
        })
        .collect();
    (out, events)
}

fn named<'e>(events: &'e [Ev], name: &str) -> Vec<&'e Ev> {
    events.iter().filter(|e| e.name == name).collect()
}

fn bytes_of(events: &[Ev], cat: &str) -> u64 {
    events
        .iter()
        .filter(|e| e.cat == cat)
        .filter_map(|e| e.bytes)
        .sum()
}

/// The one plugin call `name` inside `outer`.
fn plugin_call_inside(events: &[Ev], outer: &Ev, name: &str) {
    assert!(
        events
            .iter()
            .any(|e| e.cat == "plugin" && e.name == name && outer.contains(e)),
        "no plugin call {name} inside {outer:?}:\n{events:#?}"
    );
}

#[test]
fn the_trace_has_every_operation_nested_with_its_plugin_call_and_bytes() {
    let (out, events) = run_profiled("profile", &[]);
    out.assert_success();
    assert_eq!(out.value("a[10]"), "20", "{out}");
    // The plugin loaded (at the first registration), the registration,
    // and the image loaded by the first mapping.
    // One per plugin library tried (the host plugin, and any other staged
    // beside it).
    assert!(!named(&events, "load plugin").is_empty(), "{events:#?}");
    assert_eq!(named(&events, "register_lib").len(), 1, "{events:#?}");
    assert_eq!(named(&events, "unregister_lib").len(), 1, "{events:#?}");
    let load = named(&events, "load image");
    assert_eq!(load.len(), 1, "{events:#?}");
    plugin_call_inside(&events, load[0], "load_binary");
    // The kernel launch, inside its target region, with the plugin's call.
    let target = named(&events, "target");
    assert_eq!(target.len(), 1, "{events:#?}");
    let launches: Vec<&Ev> = events
        .iter()
        .filter(|e| e.cat == "launch" && e.name != "target")
        .collect();
    assert_eq!(launches.len(), 1, "{events:#?}");
    assert!(
        launches[0].name.starts_with("launch __omp_offloading_"),
        "{launches:?}"
    );
    // Clang names the kernel after the function and the line of its pragma.
    let source =
        std::fs::read_to_string(omptarget_test_support::paths::shim_c_source("profiled.c"))
            .unwrap();
    let line = source
        .lines()
        .position(|l| l.contains("omp target teams"))
        .unwrap()
        + 1;
    assert!(
        launches[0].name.ends_with(&format!("_main_l{line}")),
        "{line}: {launches:?}"
    );
    assert!(target[0].contains(launches[0]));
    plugin_call_inside(&events, launches[0], "run_target_team_region");
    // Mapping: begin copies 4096 bytes in, update and end copy 4096 out each.
    let begin = named(&events, "target data begin");
    let update = named(&events, "target update");
    let end = named(&events, "target data end");
    assert_eq!(
        (begin.len(), update.len(), end.len()),
        (1, 1, 1),
        "{events:#?}"
    );
    assert_eq!(bytes_of(&events, "transfer_h2d"), 4096);
    assert_eq!(bytes_of(&events, "transfer_d2h"), 8192);
    for (mapping, copy, call) in [
        (begin[0], "submit", "data_submit"),
        (update[0], "retrieve", "data_retrieve"),
        (end[0], "retrieve", "data_retrieve"),
    ] {
        let inner: Vec<&Ev> = events
            .iter()
            .filter(|e| e.name == copy && mapping.contains(e))
            .collect();
        assert_eq!(inner.len(), 1, "{mapping:?}: {events:#?}");
        assert_eq!(inner[0].bytes, Some(4096));
        plugin_call_inside(&events, inner[0], call);
    }
    // Allocations: the mapped array (in begin) and the omp_target_alloc.
    let allocs = named(&events, "alloc");
    assert_eq!(
        allocs.iter().map(|e| e.bytes.unwrap()).collect::<Vec<_>>(),
        [4096, 256]
    );
    assert!(begin[0].contains(allocs[0]));
    plugin_call_inside(&events, allocs[0], "data_alloc");
    let frees = named(&events, "free");
    assert_eq!(
        frees.iter().map(|e| e.bytes.unwrap()).collect::<Vec<_>>(),
        [4096, 256]
    );
    // The teardown, step by step, each after the last, with its plugin calls.
    let steps: Vec<&str> = events
        .iter()
        .filter(|e| e.cat == "teardown")
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "drain memory managers",
            "free user allocations",
            "unload images",
            "deinit devices",
            "deinit plugins",
            "close plugins"
        ]
    );
    let drain = named(&events, "drain memory managers")[0];
    // Our plugins free the whole cache in one batch call.
    plugin_call_inside(&events, drain, "data_delete_batch");
    plugin_call_inside(&events, named(&events, "unload images")[0], "unload_binary");
    plugin_call_inside(
        &events,
        named(&events, "deinit devices")[0],
        "deinit_device",
    );
    plugin_call_inside(
        &events,
        named(&events, "deinit plugins")[0],
        "deinit_plugin",
    );
    // Every plugin call sits inside an operation of the runtime.
    for call in events.iter().filter(|e| e.cat == "plugin") {
        assert!(
            events.iter().any(|e| e.cat != "plugin" && e.contains(call)),
            "{call:?} is inside no operation"
        );
    }
}

#[test]
fn the_trace_is_written_when_the_program_calls_exit() {
    let (out, events) = run_profiled("profile-exit", &["exit"]);
    assert_eq!(out.status.code(), Some(3), "{out}");
    assert_eq!(named(&events, "close plugins").len(), 1, "{events:#?}");
    assert_eq!(bytes_of(&events, "transfer_d2h"), 8192);
}
