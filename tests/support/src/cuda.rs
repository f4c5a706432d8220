//! The CUDA plugin's test fixtures: the fake driver
//! (`ffi/plugin/cuda/tests/fake_cuda/`: `fake_cuda.c` and `fake_cuda_module.c`, built with cc), cubins
//! built as bytes, its logs, and child processes (the dynamic loader reads
//! `LD_LIBRARY_PATH` once, at process start, and cudarc keeps the driver
//! it loaded for the whole process, so each scenario runs in its own).

use crate::paths;
use crate::stage::staged;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The staged CUDA plugin.
pub fn cuda_plugin() -> PathBuf {
    let path = staged().lib_dir.join("libomptarget.rtl.cuda.so");
    assert!(path.is_file(), "{} was not staged", path.display());
    path
}

/// The staged host plugin.
pub fn host_plugin() -> PathBuf {
    staged().lib_dir.join("libomptarget.rtl.x86_64.so")
}

/// A directory holding the fake `libcuda.so.1` built with `defines`
/// (built once per set of defines and test process).
pub fn fake_driver_dir(defines: &[&str]) -> PathBuf {
    let name = if defines.is_empty() {
        "fake-cuda".to_string()
    } else {
        format!("fake-cuda{}", defines.join("").replace('-', "_"))
    };
    let dir = paths::tmp_dir()
        .join(name)
        .join(std::process::id().to_string());
    let lib = dir.join("libcuda.so.1");
    if !lib.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let src_dir = paths::workspace_root().join("ffi/plugin/cuda/tests/fake_cuda");
        let tmp = dir.join(format!("libcuda.so.1.{:?}", std::thread::current().id()));
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
            .arg(&tmp)
            .args(["fake_cuda.c", "fake_cuda_module.c"].map(|file| src_dir.join(file)))
            .args(defines)
            .arg("-lpthread")
            .status()
            .expect("running cc");
        assert!(status.success(), "building the fake driver failed");
        std::fs::rename(&tmp, &lib).unwrap();
    }
    dir
}

/// An empty directory: a library path with no libcuda.
pub fn empty_dir() -> PathBuf {
    let dir = paths::tmp_dir().join("no-cuda");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh, empty log file path for one scenario.
pub fn log_path(name: &str) -> PathBuf {
    let path = paths::tmp_dir().join(format!("fake-cuda-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The lines of a fake driver log.
pub fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether this process is a scenario's child (see [`run_child`]).
pub fn in_child() -> bool {
    std::env::var_os("CUDA_TEST_CHILD").is_some()
}

/// Run test `name` of this test binary in a child process with
/// `LD_LIBRARY_PATH=lib_path` and `env`; the test body sees [`in_child`].
pub fn run_child(name: &str, lib_path: &Path, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("CUDA_TEST_CHILD", "1")
        .env("LD_LIBRARY_PATH", lib_path)
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("OMPTARGET_PLUGIN_DEBUG")
        .env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running the child")
}

/// The child's stderr without libtest's own lines.
pub fn child_stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A symbol of a [`cubin`].
pub enum Sym<'a> {
    /// A kernel (`STT_FUNC` in `.text`).
    Function(&'a str),
    /// A global (`STT_OBJECT` in `.data`) with its initial bytes.
    Object(&'a str, &'a [u8]),
}

/// A relocatable-style cubin: ELF64, `EM_CUDA`, ELF ABI version 7 with
/// `e_flags` = `sm`, sections `.text`, `.data`, `.symtab`, `.strtab`,
/// `.shstrtab`. The fake driver reads its symbols; the runtime's image
/// loader (the `object` crate) reads functions and variables from it.
pub fn cubin(sm: u32, symbols: &[Sym<'_>]) -> Vec<u8> {
    let text = vec![0u8; 16];
    let mut data = Vec::new();
    let mut strtab = vec![0u8];
    let mut syms = vec![[0u8; 24]];
    for sym in symbols {
        let (name, info, shndx, value, size) = match sym {
            Sym::Function(name) => (*name, 0x12u8, 1u16, 0u64, 16u64),
            Sym::Object(name, bytes) => {
                while data.len() % 8 != 0 {
                    data.push(0);
                }
                let at = data.len() as u64;
                data.extend_from_slice(bytes);
                (*name, 0x11u8, 2u16, at, bytes.len() as u64)
            }
        };
        let mut s = [0u8; 24];
        s[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
        s[4] = info;
        s[6..8].copy_from_slice(&shndx.to_le_bytes());
        s[8..16].copy_from_slice(&value.to_le_bytes());
        s[16..24].copy_from_slice(&size.to_le_bytes());
        syms.push(s);
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
    }
    let shstrtab = b"\0.text\0.data\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let names = [0u32, 1, 7, 13, 21, 29];
    let mut out = vec![0u8; 64];
    let place = |out: &mut Vec<u8>, bytes: &[u8]| -> (u64, u64) {
        while !out.len().is_multiple_of(8) {
            out.push(0);
        }
        let at = out.len() as u64;
        out.extend_from_slice(bytes);
        (at, bytes.len() as u64)
    };
    let text_at = place(&mut out, &text);
    let data_at = place(&mut out, &data);
    let symtab_bytes: Vec<u8> = syms.concat();
    let symtab_at = place(&mut out, &symtab_bytes);
    let strtab_at = place(&mut out, &strtab);
    let shstrtab_at = place(&mut out, &shstrtab);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let shoff = out.len() as u64;
    // (type, flags, (offset, size), link, info, align, entsize)
    type Section = (u32, u64, (u64, u64), u32, u32, u64, u64);
    let sections: [Section; 6] = [
        (0, 0, (0, 0), 0, 0, 0, 0),
        (1, 0x6, text_at, 0, 0, 16, 0),
        (1, 0x3, data_at, 0, 0, 8, 0),
        (2, 0, symtab_at, 4, 1, 8, 24),
        (3, 0, strtab_at, 0, 0, 1, 0),
        (3, 0, shstrtab_at, 0, 0, 1, 0),
    ];
    for (i, (ty, flags, (off, size), link, info, align, entsize)) in sections.iter().enumerate() {
        let mut sh = [0u8; 64];
        sh[0..4].copy_from_slice(&names[i].to_le_bytes());
        sh[4..8].copy_from_slice(&ty.to_le_bytes());
        sh[8..16].copy_from_slice(&flags.to_le_bytes());
        sh[24..32].copy_from_slice(&off.to_le_bytes());
        sh[32..40].copy_from_slice(&size.to_le_bytes());
        sh[40..44].copy_from_slice(&link.to_le_bytes());
        sh[44..48].copy_from_slice(&info.to_le_bytes());
        sh[48..56].copy_from_slice(&align.to_le_bytes());
        sh[56..64].copy_from_slice(&entsize.to_le_bytes());
        out.extend_from_slice(&sh);
    }
    let h = &mut out[..64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[6] = 1;
    h[7] = 51; // ELFOSABI_CUDA
    h[8] = 7; // ELF ABI version 7: e_flags low byte is the SM
    h[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
    h[18..20].copy_from_slice(&190u16.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[40..48].copy_from_slice(&shoff.to_le_bytes());
    h[48..52].copy_from_slice(&sm.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    h[60..62].copy_from_slice(&6u16.to_le_bytes());
    h[62..64].copy_from_slice(&5u16.to_le_bytes());
    out
}

/// The image most tests load: an SPMD kernel (clang 14's exec-mode
/// global), a generic one (no mode global), a global `counter` = 7 and
/// clang 19's device environment global.
pub fn test_cubin(sm: u32) -> Vec<u8> {
    cubin(
        sm,
        &[
            Sym::Function("spmd_kernel"),
            Sym::Object("spmd_kernel_exec_mode", &[2]),
            Sym::Function("generic_kernel"),
            Sym::Object("counter", &7i32.to_le_bytes()),
            Sym::Object("__omp_rtl_device_environment", &[0u8; 48]),
        ],
    )
}

/// `test_cubin` with device constructors and destructors as LLVM's
/// `nvptx-lower-ctor-dtor` pass emits them: the two kernels, the array
/// bounds, and one pointer global per function (its value stands for the
/// function's address; the fake driver logs each call with it). The
/// constructors run as 0xa1, 0xc3, 0xb2, the destructors as 0xe2, 0xd1.
/// Without `bounds`, the array globals the kernels read are missing.
pub fn cubin_with_ctors_and_dtors(bounds: bool) -> Vec<u8> {
    let ptr = |v: u64| v.to_le_bytes();
    let (a, b, c, d, e) = (ptr(0xa1), ptr(0xb2), ptr(0xc3), ptr(0xd1), ptr(0xe2));
    let zero = [0u8; 8];
    let mut syms = vec![
        Sym::Function("spmd_kernel"),
        Sym::Object("spmd_kernel_exec_mode", &[2]),
        Sym::Object("__omp_rtl_device_environment", &[0u8; 48]),
        Sym::Function("nvptx$device$init"),
        Sym::Function("nvptx$device$fini"),
        // Priority order: 101 (a, then c: equal priorities keep the
        // symbol table's order), then 65535 (b).
        Sym::Object("__init_array_object_b_x1_65535", &b),
        Sym::Object("__init_array_object_a_x1_101", &a),
        Sym::Object("__init_array_object_c_x2_101", &c),
        // Array [d (100), e (65535)], called last to first.
        Sym::Object("__fini_array_object_e_x1_65535", &e),
        Sym::Object("__fini_array_object_d_x1_100", &d),
    ];
    if bounds {
        for name in [
            "__init_array_start",
            "__init_array_end",
            "__fini_array_start",
            "__fini_array_end",
        ] {
            syms.push(Sym::Object(name, &zero));
        }
    }
    cubin(90, &syms)
}

/// Index of the first line starting with `prefix`.
pub fn first(lines: &[String], prefix: &str) -> Option<usize> {
    lines.iter().position(|l| l.starts_with(prefix))
}

/// Index of the last line starting with `prefix`.
pub fn last(lines: &[String], prefix: &str) -> Option<usize> {
    lines.iter().rposition(|l| l.starts_with(prefix))
}
