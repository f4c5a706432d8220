//! The incomplete plugin exports exactly the required entries but two.

use omptarget_abi::plugin::names;
use omptarget_plugin_kit::testing::{array_section_functions, built_cdylib};
use std::process::Command;

#[test]
fn exports_all_required_entries_but_two_and_runs_nothing_at_load() {
    let so = built_cdylib(
        "omptarget-plugin-incomplete",
        "libomptarget_rtl_incomplete.so",
    );
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut exported: Vec<&str> = text
        .lines()
        .filter_map(|l| l.rsplit(' ').next())
        .filter(|name| name.starts_with("__tgt_rtl_"))
        .collect();
    exported.sort_unstable();
    let mut expected: Vec<&str> = names::REQUIRED
        .iter()
        .copied()
        .filter(|n| *n != names::DATA_DELETE && *n != names::RUN_TARGET_TEAM_REGION)
        .collect();
    expected.sort_unstable();
    assert_eq!(exported, expected);

    // Nothing of its own runs at load or unload: the only init/fini array
    // functions are the toolchain's (crtstuff) and std's argv capture.
    for section in [".init_array", ".fini_array"] {
        for function in array_section_functions(&so, section) {
            assert!(
                ["frame_dummy", "__do_global_dtors_aux"].contains(&function.as_str())
                    || function.contains("ARGV_INIT_ARRAY"),
                "{section} runs {function}"
            );
        }
    }

    // dlopen and dlclose it: inert.
    // SAFETY: the library runs no code of its own at load time (above).
    let lib = unsafe { libloading::Library::new(&so) }.unwrap();
    lib.close().unwrap();
}
