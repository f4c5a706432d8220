//! LLVM 22's own liboffload API tests (`offload/unittests/OffloadAPI`,
//! gtest) on our `libLLVMOffload.so.22.1`, with their GPU kernels built
//! for our host devices: `scripts/liboffload-unittests.sh` builds and runs
//! every suite, and fails unless each test passes on every device or
//! `tests/liboffload/expected-failures.txt` lists it with why (and then
//! fails if a listed one passes). The suite's sources, LLVM 22's headers
//! and gtest come from `cargo xtask deps`; outside CI a machine without
//! them skips this test with a note.

use omptarget_test_support::paths;
use std::process::Command;

/// What the script needs that `cargo xtask deps` provides; `Err` names
/// the first that is missing.
fn prerequisites() -> Result<(), String> {
    let sources = paths::omptarget_dir()
        .join("llvm-sources/llvm-22/offload/unittests/OffloadAPI/common/Environment.cpp");
    let header = paths::omptarget_dir()
        .join("llvm-releases/root/usr/lib/llvm-22/include/offload/OffloadAPI.h");
    let needs = [
        (sources, "LLVM 22's offload/unittests (cargo xtask deps)"),
        (header, "LLVM 22's OffloadAPI.h (cargo xtask deps)"),
        (
            "/usr/lib/llvm-22/include/llvm/Support/MemoryBuffer.h".into(),
            "LLVM 22's headers (apt-get install llvm-22-dev)",
        ),
        (
            "/usr/include/gtest/gtest.h".into(),
            "gtest (apt-get install libgtest-dev)",
        ),
    ];
    match needs.iter().find(|(path, _)| !path.exists()) {
        Some((_, what)) => Err(format!("{what} is missing")),
        None => Ok(()),
    }
}

#[test]
fn llvm_liboffload_api_tests_pass_on_our_host_devices() {
    if let Err(missing) = prerequisites() {
        assert!(std::env::var_os("CI").is_none(), "{missing}");
        eprintln!("skipping: {missing}");
        return;
    }
    let staged = omptarget_test_support::staged();
    let out = Command::new("bash")
        .arg(paths::workspace_root().join("scripts/liboffload-unittests.sh"))
        .env("OMPTARGET_LIB_DIR", &staged.lib_dir)
        .output()
        .expect("run scripts/liboffload-unittests.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(
        out.status.success(),
        "LLVM 22's liboffload API tests:\n{text}"
    );
}
