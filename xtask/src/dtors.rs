//! `cargo xtask check-dtors [LIB...]`: prove that a shared library has no
//! global destructors.
//!
//! A library passes when
//! * it imports neither `atexit` nor `__cxa_atexit` (how C++ static
//!   destructors and `atexit` handlers get registered), and
//! * its `.fini_array` holds only the C runtime's own
//!   `__do_global_dtors_aux` plus at most one function named
//!   `omptarget_safety_net` (the documented safety net of the plugin
//!   contract; see README.md "No global destructors").
//!
//! `.fini_array` slots of a shared object are filled by `R_X86_64_RELATIVE`
//! relocations; each slot is resolved to the address the loader will store
//! there and then to the symbols defined at that address.

use anyhow::{bail, Context, Result};
use object::elf::{R_X86_64_64, R_X86_64_RELATIVE};
use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationFlags};
use object::{RelocationTarget, SymbolKind};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Imports that register process-exit destructors.
pub const FORBIDDEN_IMPORTS: &[&str] = &["atexit", "__cxa_atexit"];
/// The C runtime's own `.fini_array` entry (crtbeginS.o).
pub const CRT_FINI: &str = "__do_global_dtors_aux";
/// The one extra `.fini_array` function a library may have.
pub const SAFETY_NET: &str = "omptarget_safety_net";

/// What one library contains.
#[derive(Debug)]
pub struct Report {
    pub path: PathBuf,
    /// Forbidden imports found.
    pub atexit_imports: Vec<String>,
    /// Per `.fini_array` slot: the symbol names defined at its target.
    pub fini: Vec<(u64, Vec<String>)>,
    /// Why the library fails; empty when it passes.
    pub violations: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "ok" } else { "FAIL" };
        writeln!(f, "{verdict}: {}", self.path.display())?;
        if self.atexit_imports.is_empty() {
            writeln!(f, "  imports: no atexit / __cxa_atexit")?;
        } else {
            writeln!(f, "  imports: {}", self.atexit_imports.join(", "))?;
        }
        writeln!(f, "  .fini_array: {} entries", self.fini.len())?;
        for (addr, names) in &self.fini {
            let shown = if names.is_empty() {
                "<no symbol>".to_string()
            } else {
                names.join(" = ")
            };
            writeln!(f, "    {addr:#x} {shown}")?;
        }
        for v in &self.violations {
            writeln!(f, "  violation: {v}")?;
        }
        Ok(())
    }
}

/// Inspect one shared library.
pub fn inspect(path: &Path) -> Result<Report> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file = object::File::parse(&*data)
        .with_context(|| format!("{} is not an object file", path.display()))?;

    let atexit_imports: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok())
        .map(|n| n.split('@').next().unwrap_or(n))
        .filter(|n| FORBIDDEN_IMPORTS.contains(n))
        .map(str::to_string)
        .collect();

    let fini = fini_array_targets(&file)?
        .into_iter()
        .map(|addr| (addr, symbols_at(&file, addr)))
        .collect::<Vec<_>>();

    let mut violations: Vec<String> = atexit_imports
        .iter()
        .map(|i| format!("imports {i}: registers a destructor at exit"))
        .collect();
    let mut safety_nets = 0;
    for (addr, names) in &fini {
        if names.iter().any(|n| n == CRT_FINI) {
            continue;
        }
        if names.iter().any(|n| n.contains(SAFETY_NET)) {
            safety_nets += 1;
            if safety_nets > 1 {
                violations.push(format!("second safety net at {addr:#x}"));
            }
            continue;
        }
        let shown = if names.is_empty() {
            "an unnamed function".to_string()
        } else {
            names.join(" = ")
        };
        violations.push(format!(".fini_array runs {shown} ({addr:#x})"));
    }
    Ok(Report {
        path: path.to_path_buf(),
        atexit_imports,
        fini,
        violations,
    })
}

/// The addresses the loader stores into `.fini_array`'s slots.
fn fini_array_targets(file: &object::File<'_>) -> Result<Vec<u64>> {
    let Some(section) = file.section_by_name(".fini_array") else {
        return Ok(Vec::new());
    };
    let base = section.address();
    let data = section.data()?;
    if data.len() % 8 != 0 {
        bail!(".fini_array is {} bytes, not whole pointers", data.len());
    }
    let dynsym = file.dynamic_symbol_table();
    let mut relocated: HashMap<u64, u64> = HashMap::new();
    for (at, r) in file.dynamic_relocations().into_iter().flatten() {
        if at < base || at >= base + data.len() as u64 {
            continue;
        }
        let RelocationFlags::Elf { r_type } = r.flags() else {
            continue;
        };
        let value = match (r_type, r.target()) {
            (R_X86_64_RELATIVE, _) => r.addend() as u64,
            (R_X86_64_64, RelocationTarget::Symbol(i)) => {
                let sym = dynsym
                    .as_ref()
                    .context("a symbol relocation without .dynsym")?
                    .symbol_by_index(i)?;
                sym.address().wrapping_add(r.addend() as u64)
            }
            (other, _) => bail!("unexpected relocation type {other} in .fini_array"),
        };
        relocated.insert(at, value);
    }
    Ok(data
        .chunks_exact(8)
        .enumerate()
        .map(|(i, word)| {
            let at = base + 8 * i as u64;
            relocated
                .get(&at)
                .copied()
                .unwrap_or_else(|| u64::from_le_bytes(word.try_into().expect("8 bytes")))
        })
        .collect())
}

/// Names of the functions defined at `addr` (static and dynamic tables).
fn symbols_at(file: &object::File<'_>, addr: u64) -> Vec<String> {
    let mut names: Vec<String> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.address() == addr && !s.is_undefined())
        .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Unknown))
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every `.so` directly inside `dir`, sorted.
pub fn shared_libraries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut libs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "so") && p.is_file())
        .collect();
    libs.sort();
    Ok(libs)
}

/// Inspect `libs`, print every report, fail if any library fails.
pub fn check(libs: &[PathBuf]) -> Result<()> {
    if libs.is_empty() {
        bail!("no shared libraries to check");
    }
    let mut failed = Vec::new();
    for lib in libs {
        let report = inspect(lib)?;
        print!("{report}");
        if !report.passed() {
            failed.push(lib.display().to_string());
        }
    }
    if !failed.is_empty() {
        bail!("global destructors in: {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn in_ci() -> bool {
        std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
    }

    /// Build a shared library from C source with the system compiler.
    fn build(dir: &Path, name: &str, source: &str) -> PathBuf {
        let src = dir.join(format!("{name}.c"));
        let out = dir.join(format!("lib{name}.so"));
        std::fs::write(&src, source).unwrap();
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("running cc");
        assert!(status.success(), "cc failed on {name}");
        out
    }

    #[test]
    fn plain_library_passes_with_only_the_crt_entry() {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(dir.path(), "plain", "int f(void) { return 1; }\n");
        let report = inspect(&lib).unwrap();
        print!("{report}");
        assert!(report.passed());
        let names: Vec<_> = report.fini.iter().flat_map(|(_, n)| n.clone()).collect();
        assert_eq!(names, [CRT_FINI]);
    }

    #[test]
    fn one_named_safety_net_passes_two_fail() {
        let dir = tempfile::tempdir().unwrap();
        let one = build(
            dir.path(),
            "one_net",
            "static void omptarget_safety_net(void) {}\n\
             __attribute__((used, section(\".fini_array\")))\n\
             static void (*net)(void) = omptarget_safety_net;\n",
        );
        let report = inspect(&one).unwrap();
        print!("{report}");
        assert!(report.passed());
        assert_eq!(report.fini.len(), 2);

        let two = build(
            dir.path(),
            "two_nets",
            "static void omptarget_safety_net(void) {}\n\
             static void omptarget_safety_net_2(void) {}\n\
             __attribute__((used, section(\".fini_array\")))\n\
             static void (*nets[2])(void) = { omptarget_safety_net, omptarget_safety_net_2 };\n",
        );
        let report = inspect(&two).unwrap();
        print!("{report}");
        assert!(!report.passed());
    }

    #[test]
    fn destructor_attribute_fails() {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(
            dir.path(),
            "dtor",
            "int counter;\n\
             __attribute__((destructor)) static void global_teardown(void) { counter = 0; }\n",
        );
        let report = inspect(&lib).unwrap();
        print!("{report}");
        assert!(!report.passed());
        assert!(report.violations[0].contains("global_teardown"));
    }

    #[test]
    fn atexit_registration_fails() {
        let dir = tempfile::tempdir().unwrap();
        let lib = build(
            dir.path(),
            "atexit",
            "#include <stdlib.h>\n\
             static void bye(void) {}\n\
             __attribute__((constructor)) static void hello(void) { atexit(bye); }\n",
        );
        let report = inspect(&lib).unwrap();
        print!("{report}");
        assert!(!report.passed());
        assert!(report.atexit_imports.iter().any(|i| i.contains("atexit")));
    }

    /// Self-check against a real library: LLVM 14's libomptarget tears
    /// down from `__attribute__((destructor(101))) deinit()`, a second
    /// `.fini_array` entry (the Debian build is stripped, so it is unnamed).
    #[test]
    fn llvm14_libomptarget_is_flagged() {
        let llvm = Path::new("/usr/lib/llvm-14/lib/libomptarget.so");
        if !llvm.is_file() {
            assert!(!in_ci(), "{} missing (libomp-14-dev)", llvm.display());
            eprintln!("SKIPPED: {} not found", llvm.display());
            return;
        }
        let report = inspect(llvm).unwrap();
        print!("{report}");
        assert!(!report.passed());
        assert_eq!(report.fini.len(), 2, "crt entry + deinit");
        assert!(report
            .violations
            .iter()
            .any(|v| v.contains(".fini_array runs")));
    }
}
