//! Shared helpers of the runtime's integration tests: the staged plugins,
//! isolated copies of the test plugin with their conf and log, and kernels
//! compiled from tests/kernels/*.c.
#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Where `cargo run -p xtask -- stage` put the libraries.
pub struct Staged {
    /// `target/omptarget/lib`: shipped plugins (and the shim).
    pub lib_dir: PathBuf,
    /// `target/omptarget/test-plugins`: test-only plugins.
    pub test_plugin_dir: PathBuf,
}

/// The workspace root: the package's own directory for the core's tests,
/// its parent for a member's (`openmp/tests` includes this module too).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .expect("the workspace root holds Cargo.lock")
        .to_path_buf()
}

/// Stage the plugins once per test process and say where they are.
pub fn staged() -> &'static Staged {
    static STAGED: OnceLock<Staged> = OnceLock::new();
    STAGED.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .current_dir(workspace_root())
            .args(["run", "-q", "-p", "xtask", "--", "stage"])
            .output()
            .expect("running cargo run -p xtask -- stage");
        assert!(
            output.status.success(),
            "xtask stage failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        Staged {
            lib_dir: target.join("omptarget/lib"),
            test_plugin_dir: target.join("omptarget/test-plugins"),
        }
    })
}

/// A staged library that must exist.
fn staged_file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    assert!(path.is_file(), "{} was not staged", path.display());
    path
}

/// A scratch directory under cargo's per-target temp dir, removed on drop.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("omptarget-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("creating a scratch dir")
}

/// A plugin library copied into its own directory, so that it gets its own
/// instance (and state) when dlopened.
pub struct PluginCopy {
    /// The copy.
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

fn copy_plugin(source: &Path) -> PluginCopy {
    let dir = scratch_dir();
    let path = dir.path().join(source.file_name().expect("a file name"));
    std::fs::copy(source, &path).expect("copying the plugin");
    PluginCopy { path, _dir: dir }
}

/// A private copy of the host plugin (`libomptarget.rtl.x86_64.so`).
pub fn host_plugin() -> PluginCopy {
    copy_plugin(&staged_file(
        &staged().lib_dir,
        "libomptarget.rtl.x86_64.so",
    ))
}

/// A private copy of the plugin lacking required entries.
pub fn incomplete_plugin() -> PluginCopy {
    copy_plugin(&staged_file(
        &staged().test_plugin_dir,
        "libomptarget.rtl.incomplete.so",
    ))
}

/// A private copy of the test plugin with `conf` beside it.
pub struct TestPlugin {
    pub path: PathBuf,
    pub log: PathBuf,
    _copy: PluginCopy,
}

/// Copy the test plugin into a fresh directory and write `<so>.conf` with
/// `conf` (`key=value` lines: devices, fail_init_device, fail_init_plugin,
/// alloc_limit_bytes, log). Its log goes to `<so>.log` unless conf says.
pub fn test_plugin(conf: &str) -> TestPlugin {
    let copy = copy_plugin(&staged_file(
        &staged().test_plugin_dir,
        "libomptarget.rtl.test.so",
    ));
    let mut conf_path = copy.path.clone().into_os_string();
    conf_path.push(".conf");
    std::fs::write(&conf_path, conf).expect("writing the test plugin conf");
    let log = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("log="))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let mut log = copy.path.clone().into_os_string();
            log.push(".log");
            log.into()
        });
    TestPlugin {
        path: copy.path.clone(),
        log,
        _copy: copy,
    }
}

impl TestPlugin {
    /// The plugin's log, one entry call per line.
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The entry names (first token) of the log lines.
    pub fn log_calls(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    }
}

/// Compile `tests/kernels/<c_file>` with `clang-14 -shared -fPIC -O2` (once
/// per process) and return the shared object.
pub fn build_kernel_image(c_file: &str) -> PathBuf {
    // A Vec, not a HashMap: its heap blocks stay plainly reachable from
    // the static, which keeps valgrind's leak report of test binaries clean.
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    if let Some((_, path)) = built.iter().find(|(name, _)| name == c_file) {
        return path.clone();
    }
    let kernels = workspace_root().join("tests/kernels");
    let source = kernels.join(c_file);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernels");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(Path::new(c_file).with_extension("so"));
    // Build under a private name, then rename: concurrent test processes
    // never see a half-written object.
    let tmp = dir.join(format!(".{c_file}.{}.so", std::process::id()));
    let status = Command::new("clang-14")
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(&kernels)
        .arg(&source)
        .arg("-o")
        .arg(&tmp)
        .status()
        .expect("running clang-14");
    assert!(status.success(), "clang-14 failed on {}", source.display());
    std::fs::rename(&tmp, &out).unwrap();
    built.push((c_file.to_owned(), out.clone()));
    out
}

/// Index of the first log line whose entry name is `call`.
pub fn first(calls: &[String], call: &str) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no {call} in the log: {calls:?}"))
}

/// Index of the last log line whose entry name is `call`.
pub fn last(calls: &[String], call: &str) -> usize {
    calls
        .iter()
        .rposition(|c| c == call)
        .unwrap_or_else(|| panic!("no {call} in the log: {calls:?}"))
}

/// A raw block on `device`, for the tests of the raw device layer (its
/// bookkeeping, the memory manager, the teardown's leak report).
pub fn alloc(
    device: &omptarget::Device,
    size: usize,
    host_ptr: *mut std::ffi::c_void,
    kind: omptarget::abi::AllocKind,
) -> omptarget::Result<omptarget::DevicePtr> {
    // SAFETY: the tests pass no host pointer (null) or one they own; the
    // block belongs to the test alone.
    unsafe { device.alloc(size, host_ptr, kind) }
}

/// Free a raw block: the tests own every block they free (never one of a
/// `DeviceBuffer`), and the raw layer refuses unknown or freed addresses
/// without touching memory, which is what several tests check.
pub fn free(device: &omptarget::Device, ptr: omptarget::DevicePtr) -> omptarget::Result<()> {
    // SAFETY: see above.
    unsafe { device.free(ptr) }
}
