//! Shared machinery of the ABI tests: find a clang, compile the offload
//! fixture with it, let LLVM itself compute struct layouts, and read values
//! out of linked ELF libraries.
//!
//! The tests compare this crate's `repr(C)` types against what real
//! compilers emit, so that a wrong offset shows up here and not as memory
//! corruption in the runtime.

pub mod elf;
pub mod ir;

use omptarget_test_support::release::Release;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The offload fixture compiled by every test: a `declare target` global, a
/// `declare target link` global, a worksharing teams loop with explicit
/// `num_teams`/`thread_limit`, and a `nowait` region. No `main`: it is linked
/// as a shared library, which lets a host link succeed without the matching
/// LLVM runtime installed.
pub const FIXTURE_C: &str = r#"
#pragma omp declare target
int fixture_global[4];
#pragma omp end declare target

long fixture_linked[3];
#pragma omp declare target link(fixture_linked)

void fixture_teams(int *a, int n) {
#pragma omp target teams distribute parallel for num_teams(2) thread_limit(8) \
    map(tofrom: a[0:n])
  for (int i = 0; i < n; i++)
    a[i] += fixture_global[0] + (int)fixture_linked[0];
}

void fixture_deferred(int *a, int n) {
#pragma omp target nowait map(tofrom: a[0:n])
  for (int i = 0; i < n; i++)
    a[i] *= 2;
#pragma omp taskwait
}
"#;

/// The offload target every test compiles for (the host plugin's).
pub const TARGET: &str = "x86_64-pc-linux-gnu";

pub use omptarget_test_support::clang::in_ci;

/// One installed clang of a given major version.
#[derive(Debug, Clone)]
pub struct Clang {
    pub major: u32,
    pub path: PathBuf,
}

/// The clang majors this crate's types are checked against. `cargo xtask
/// deps` installs them; CI fails if one is missing.
pub const REQUIRED_CLANGS: [u32; 3] = [14, 19, 22];

/// Find `clang-<major>`. A missing required compiler is a test failure under
/// CI; locally the caller skips (with the reason printed). Compilers outside
/// [`REQUIRED_CLANGS`] are optional everywhere.
pub fn clang(major: u32) -> Option<Clang> {
    clang_with_tools(major, &[])
}

/// [`clang`], also requiring the LLVM `tools` (in `/usr/lib/llvm-N/bin`)
/// that a link needs (in `clang-tools-N`, or `llvm-N` for clang 22's
/// `llvm-offload-binary`).
pub fn clang_with_tools(major: u32, tools: &[&str]) -> Option<Clang> {
    let missing = match omptarget_test_support::clang::find_clang(major, tools) {
        Ok(path) => return Some(Clang { major, path }),
        Err(missing) => missing,
    };
    let required = REQUIRED_CLANGS.contains(&major);
    if required && in_ci() {
        panic!(
            "{} not installed but CI is set: the ABI checks against clang {major} \
             must run in CI (install with `cargo xtask deps`)",
            missing.join(", ")
        );
    }
    eprintln!(
        "SKIPPED: {} not found; `cargo xtask deps` installs {}",
        missing.join(", "),
        if required {
            "it"
        } else {
            "the required compilers only (this one is optional)"
        }
    );
    None
}

impl Clang {
    /// Clang 15 and later print opaque pointers (`ptr`); 14 prints typed ones.
    pub fn opaque_pointers(&self) -> bool {
        self.major >= 15
    }

    /// Run clang with the OpenMP offload flags plus `args`, in `dir`.
    pub fn offload(&self, dir: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(dir)
            .arg("-fopenmp")
            .arg(format!("-fopenmp-targets={TARGET}"))
            .args(args);
        run(cmd)
    }

    /// Compile `fixture.c` with the offload flags plus `args` into `out`,
    /// and return what was written there.
    pub fn emit(&self, dir: &Path, args: &[&str], out: &str) -> String {
        let mut all = args.to_vec();
        all.extend(["fixture.c", "-o", out]);
        self.offload(dir, &all).check();
        std::fs::read_to_string(dir.join(out)).expect("reading clang's output")
    }

    /// Run clang with plain `args` (no OpenMP flags), in `dir`.
    pub fn plain(&self, dir: &Path, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(dir).args(args);
        run(cmd)
    }

    /// Host-side IR of the fixture (the module that calls `__tgt_*`).
    pub fn host_ir(&self, dir: &Path) -> String {
        write_fixture(dir);
        if self.major >= 15 {
            self.emit(dir, &["--offload-host-only", "-S", "-emit-llvm"], "host.ll")
        } else {
            ir::bundle_part(&self.bundled_ir_14(dir), "host")
                .expect("clang 14 printed no host part")
        }
    }

    /// Device-side IR of the fixture (the kernels as the plugin runs them).
    pub fn device_ir(&self, dir: &Path) -> String {
        write_fixture(dir);
        if self.major >= 15 {
            self.emit(
                dir,
                &["--offload-device-only", "-S", "-emit-llvm"],
                "device.ll",
            )
        } else {
            ir::bundle_part(&self.bundled_ir_14(dir), "openmp")
                .expect("clang 14 printed no device part")
        }
    }

    /// Clang 14 has no `--offload-host-only`; with `-S -emit-llvm` it writes
    /// a textual offload bundle holding the device and the host module.
    fn bundled_ir_14(&self, dir: &Path) -> String {
        self.emit(dir, &["-S", "-emit-llvm"], "bundle.ll")
    }

    /// Link the fixture into a shared library (host code, registration code,
    /// offload entries and the embedded device image). LLVM 14's
    /// `libomp`/`libomptarget` only satisfy the linker's `-l` lookups; the
    /// library is inspected, never loaded.
    pub fn link_fixture(&self, dir: &Path) -> PathBuf {
        write_fixture(dir);
        let out = format!("libfixture{}.so", self.major);
        let llvm14 = format!("-L{}", Release::Llvm14.reference_lib_dir().display());
        let mut args = vec!["-fPIC", "-shared", "fixture.c", &llvm14, "-o", &out];
        if self.major >= 15 {
            // The x86_64 device link would want libomptarget.devicertl.a,
            // shipped only by libomp-NN-dev (which conflicts with 14's).
            args.insert(0, "-nogpulib");
        }
        self.offload(dir, &args).check();
        dir.join(out)
    }
}

/// Write the fixture source into `dir` (idempotent).
pub fn write_fixture(dir: &Path) {
    let path = dir.join("fixture.c");
    if !path.exists() {
        std::fs::write(&path, FIXTURE_C).expect("writing fixture.c");
    }
}

/// A finished child process.
pub struct Output {
    pub what: String,
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Run a command to completion, capturing its output.
pub fn run(mut cmd: Command) -> Output {
    let what = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    Output {
        what,
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Output {
    /// Panic with the command's output unless it succeeded.
    pub fn check(self) -> Self {
        assert!(
            self.status.success(),
            "{} failed ({}):\n{}\n{}",
            self.what,
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A fresh temporary directory for one test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("omptarget-abi-")
        .tempdir()
        .expect("creating a temporary directory")
}

/// A Rust type's layout, gathered with `core::mem::offset_of!`.
#[derive(Debug)]
pub struct RustLayout {
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    /// (field, offset, size), in declaration order.
    pub fields: Vec<(&'static str, usize, usize)>,
}

impl RustLayout {
    /// Offset of `field`; panics on a name the layout does not list.
    pub fn offset(&self, field: &str) -> u64 {
        self.fields
            .iter()
            .find(|f| f.0 == field)
            .unwrap_or_else(|| panic!("{} has no field {field}", self.name))
            .1 as u64
    }
}

/// `size_of` the field a projection closure points at.
pub fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    core::mem::size_of::<F>()
}

/// `rust_layout!(Type { a, b, c })`: the layout of `Type`, listing every
/// field (a forgotten field is a compile error, via the exhaustive pattern).
#[macro_export]
macro_rules! rust_layout {
    ($t:path { $($f:ident),* $(,)? }) => {{
        let _exhaustive = |x: $t| {
            let $t { $($f: _),* } = x;
        };
        $crate::common::RustLayout {
            name: stringify!($t),
            size: core::mem::size_of::<$t>(),
            align: core::mem::align_of::<$t>(),
            fields: vec![$((
                stringify!($f),
                core::mem::offset_of!($t, $f),
                $crate::common::field_size(|x: &$t| &x.$f),
            )),*],
        }
    }};
}

/// Assert that LLVM's layout of a struct and ours agree field by field,
/// printing both side by side.
pub fn assert_same_layout(what: &str, llvm: &ir::IrLayout, rust: &RustLayout) {
    println!(
        "{what}: LLVM size {} align {}; {} size {} align {}",
        llvm.size, llvm.align, rust.name, rust.size, rust.align
    );
    for (i, (off, size, ty)) in llvm.fields.iter().enumerate() {
        let ours = rust
            .fields
            .get(i)
            .map(|(n, o, s)| format!("{n} @{o} ({s} B)"))
            .unwrap_or_else(|| "-".into());
        println!("  [{i:2}] {ty:<12} @{off:<3} ({size} B)   {ours}");
    }
    assert_eq!(
        llvm.fields.len(),
        rust.fields.len(),
        "{what}: LLVM has {} fields, {} has {}",
        llvm.fields.len(),
        rust.name,
        rust.fields.len()
    );
    for (i, ((off, size, ty), (name, roff, rsize))) in
        llvm.fields.iter().zip(&rust.fields).enumerate()
    {
        assert_eq!(
            (*off, *size),
            (*roff as u64, *rsize as u64),
            "{what}: field {i} ({ty}) vs {}.{name}: (offset, size) differ",
            rust.name
        );
    }
    assert_eq!(llvm.size, rust.size as u64, "{what}: sizes differ");
    assert_eq!(llvm.align, rust.align as u64, "{what}: alignments differ");
}
