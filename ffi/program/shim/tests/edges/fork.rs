//! fork while other threads offload, then offload in the child.

use super::*;

/// Run `edge_fork_while_offloading.c` (`plugin`: the test plugin, or the
/// discovered host plugin) and check every child and the parent. The
/// program kills a child still alive after [`CHILD_HANG_LIMIT_S`] (status
/// 137): hang detection, far above a child's normal lifetime (tens of
/// milliseconds; a few seconds under valgrind).
fn fork_while_offloading(label: &str, plugin: bool) {
    let scratch = Scratch::new(label);
    let program = build(&scratch, "edge_fork_while_offloading.c");
    let mut run = Run::new(&scratch, &program)
        .arg(CHILD_HANG_LIMIT_S.to_string())
        .timeout(HANG_LIMIT * 4);
    if plugin {
        let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
        run = run.plugin(&plugin);
    }
    let out = run.run();
    out.assert_success();
    assert_eq!(
        out.value("child_status"),
        "0",
        "a child failed (137: killed, hung for {CHILD_HANG_LIMIT_S} s)\n{out}"
    );
    assert_eq!(out.value("parent_regions_ok"), "1", "{out}");
    let children = out.stdout.matches("child_wrong=").count();
    assert_eq!(children, 3, "every child prints its result\n{out}");
    assert_eq!(out.stdout.matches("child_wrong=0").count(), 3, "{out}");
    assert_no_heap_or_plugin_trouble(&out);
}

/// The hang limit of a forked child (seconds), passed to the program.
pub(crate) const CHILD_HANG_LIMIT_S: u32 = 60;

/// `fork()` while another thread offloads on device 0 in a loop; the child
/// runs 200 regions (results checked) and exits 0; 3 forks.
/// Discovered host plugin.
///
/// Before the fix: rate 5/5: 4 runs with a child hung forever (killed by
/// the parent after 6 s), 1 with a child that lived 5.05 s (the exit's
/// bounded wait for the busy thread's inherited reader count: "offload
/// calls still running on other threads at exit"). The hung child waits
/// on the device's mapping table mutex that the parent's busy thread held
/// at the fork: `child -> __tgt_target_mapper -> Offload::run_target ->
/// process_data_before -> data_begin -> MappingTable::get_target_pointer
/// -> lock_entries -> Mutex::lock_contended` (futex wait, forever).
#[test]
fn fork_while_offloading_then_offload_in_the_child_on_the_host_plugin() {
    fork_while_offloading("edge-fork-host", false);
}

/// The same on a two-device test plugin.
///
/// Before the fix: see the host-plugin variant; rate below in the report.
#[test]
fn fork_while_offloading_then_offload_in_the_child_on_the_test_plugin() {
    fork_while_offloading("edge-fork-plugin", true);
}
