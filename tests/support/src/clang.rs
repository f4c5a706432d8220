//! Building C for the tests: the shim's programs (`ffi/program/shim/tests/c`) and
//! the kernels (`tests/kernels`) with clang-14, the examples' kernels with
//! the system compiler, reading a binary's dynamic symbols, and finding
//! LLVM N's tools. (The C suites build with each release's clang:
//! [`crate::suite::build`].) Builds go through [`cc_cache`]: made once
//! per staging, whichever test process asks first.

use crate::stage::staged;
use crate::{cc_cache, paths};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The clang-14 flags of an offload build for the host as the device.
pub const OFFLOAD: &[&str] = &["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"];

const CLANG: &str = "clang-14";

/// Compile `sources` (files of `ffi/program/shim/tests/c/`) with clang-14 into
/// `out`, with `flags` before the sources and `libs` after them.
pub fn clang(sources: &[&str], out: &Path, flags: &[&str], libs: &[&str]) {
    let mut cmd = Command::new(CLANG);
    cmd.args(["-O1", "-Wall", "-Werror"]).args(flags);
    for source in sources {
        cmd.arg(paths::shim_c_source(source));
    }
    cmd.arg("-o").arg(out).args(libs);
    let output = match cc_cache::build(CLANG, &cc_cache::args_of(&cmd), out) {
        Ok(output) => output,
        Err(err) => panic!("cannot run {CLANG} (install clang-14 and libomp-14-dev): {err}"),
    };
    assert!(
        output.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `-L<staged lib dir> -lomptarget`, forced NEEDED even if unused.
pub fn link_shim() -> Vec<String> {
    vec![
        format!("-L{}", staged().lib_dir.display()),
        "-Wl,--no-as-needed".to_owned(),
        "-lomptarget".to_owned(),
        "-Wl,--as-needed".to_owned(),
    ]
}

/// `<compiler> -shared -fPIC -O2 -I tests/kernels tests/kernels/<source> -o out`,
/// through [`cc_cache`] if `cached` (the examples build theirs as a program
/// would, every time).
fn compile_kernel(compiler: &str, source: &str, out: &Path, cached: bool) -> Result<(), String> {
    let kernels = paths::kernels_dir();
    let mut cmd = Command::new(compiler);
    cmd.args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(&kernels)
        .arg(kernels.join(source))
        .arg("-o")
        .arg(out);
    let output = if cached {
        cc_cache::build(compiler, &cc_cache::args_of(&cmd), out)
    } else {
        cmd.output()
    }
    .map_err(|e| format!("running {compiler}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{compiler} failed on {source}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// Compile `tests/kernels/<c_file>` with `clang-14 -shared -fPIC -O2` (once
/// per process) into `<target>/tmp/kernels` and return the shared object.
pub fn build_kernel_image(c_file: &str) -> PathBuf {
    // A Vec, not a HashMap: its heap blocks stay plainly reachable from
    // the static, which keeps valgrind's leak report of test binaries clean.
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    if let Some((_, path)) = built.iter().find(|(name, _)| name == c_file) {
        return path.clone();
    }
    let dir = paths::tmp_dir().join("kernels");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(Path::new(c_file).with_extension("so"));
    // Build under a private name, then rename: concurrent test processes
    // never see a half-written object.
    let tmp = dir.join(format!(".{c_file}.{}.so", std::process::id()));
    compile_kernel(CLANG, c_file, &tmp, true).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, &out).unwrap();
    built.push((c_file.to_owned(), out.clone()));
    out
}

/// The examples' kernel: `tests/kernels/<source>` compiled with the system C
/// compiler (`cc`, or `$CC`) into `dir`, as a program would build its own
/// device code for the host plugin; or the object given as the program's
/// first argument.
pub fn example_kernel(source: &str, dir: &Path) -> Result<PathBuf, String> {
    if let Some(path) = std::env::args_os().nth(1) {
        return Ok(PathBuf::from(path));
    }
    let out = dir.join(source.replace(".c", ".so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    compile_kernel(&cc, source, &out, false)?;
    Ok(out)
}

/// The dynamic symbols `nm -D` lists for `binary` as (kind, name).
pub fn dynamic_symbols(binary: &Path) -> Vec<(String, String)> {
    let out = Command::new("nm")
        .arg("-D")
        .arg(binary)
        .output()
        .expect("run nm (binutils)");
    assert!(out.status.success(), "nm -D {} failed", binary.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().rev();
            let name = fields.next()?;
            let kind = fields.next()?;
            Some((kind.to_owned(), name.split('@').next()?.to_owned()))
        })
        .collect()
}

/// True if `binary` references or defines the dynamic symbol `name`.
pub fn has_dynamic_symbol(binary: &Path, name: &str) -> bool {
    dynamic_symbols(binary).iter().any(|(_, n)| n == name)
}

/// True when running under CI (`CI` set to anything but "", "0", "false").
pub fn in_ci() -> bool {
    match std::env::var("CI") {
        Ok(v) => !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false")),
        Err(_) => false,
    }
}

/// `/usr/lib/llvm-<major>/bin/<tool>`: a tool of LLVM `major`, installed or
/// not.
pub fn llvm_tool(major: u32, tool: &str) -> PathBuf {
    PathBuf::from(format!("/usr/lib/llvm-{major}/bin/{tool}"))
}

/// LLVM `major`'s clang, if it and `tools` are installed; else the paths
/// that are missing.
pub fn find_clang(major: u32, tools: &[&str]) -> Result<PathBuf, Vec<String>> {
    let mut missing: Vec<String> = std::iter::once("clang")
        .chain(tools.iter().copied())
        .map(|t| llvm_tool(major, t))
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    missing.dedup();
    if missing.is_empty() {
        Ok(llvm_tool(major, "clang"))
    } else {
        Err(missing)
    }
}
