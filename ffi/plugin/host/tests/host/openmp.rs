//! Real OpenMP offload code compiled by clang-14: run its device image
//! through the plugin's entries, and run the whole program under LLVM 14's
//! libomptarget with this plugin in place of LLVM's.

use crate::helpers::*;
use std::process::Command;

/// Target regions over declare-target globals: `bump` has no arguments,
/// `fill` one scalar passed by value (pointer-sized, as clang passes
/// firstprivate scalars) and forks teams and threads through libomp,
/// `axpy` maps two arrays and passes two scalars.
const OPENMP_C: &str = r#"
#include <stdio.h>
#define N 256
#pragma omp declare target
long counter = 0;
double data[N];
#pragma omp end declare target

void bump(void) {
  #pragma omp target
  { counter += 1; }
}

void fill(double scale) {
  #pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++) {
    data[i] = scale * i + counter;
  }
}

void axpy(double *x, double *y, double a, int n) {
  #pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])
  for (int i = 0; i < n; i++) y[i] += a * x[i];
}

int main(void) {
  double x[1000], y[1000];
  for (int i = 0; i < 1000; i++) { x[i] = i; y[i] = 1; }
  bump(); bump();
  fill(2.0);
  axpy(x, y, 3.0, 1000);
  double d[N];
  #pragma omp target map(from: d)
  for (int i = 0; i < N; i++) d[i] = data[i];
  long sum = 0;
  for (int i = 0; i < 1000; i++) sum += (long)y[i];
  printf("counter-data %.1f %.1f\n", d[0], d[N - 1]);
  printf("axpy-sum %ld\n", sum);
  return 0;
}
"#;

fn kernel_named(entries: &[(String, usize)], function: &str) -> String {
    entries
        .iter()
        .find(|(name, size)| *size == 0 && name.contains(&format!("_{function}_l")))
        .unwrap_or_else(|| panic!("no kernel for {function} in {entries:?}"))
        .0
        .clone()
}

#[test]
fn openmp_device_image_runs_through_the_entries() {
    let work = tempfile::tempdir().unwrap();
    let build = compile_openmp(work.path(), "omp", OPENMP_C, &[]);
    let bytes = std::fs::read(&build.device_image).unwrap();
    let entries = openmp_entries(&bytes);
    let names: Vec<(&str, usize)> = entries.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let image = ImageFixture::new(bytes.clone(), &names);
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives and `table` was just
    // loaded on device 2; the kernels get the arguments clang gave them (none
    // for `bump`, one scalar for `fill`, four for `axpy`, with as many
    // offsets); `counter` is an 8-byte and `data` a 256-double device global of
    // that table, `dx` and `dy` are `n * 8`-byte blocks from `alloc`, and every
    // copy stays within them.
    unsafe {
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.is_valid_binary)(image.desc()), 1);
        assert_eq!((p.init_device)(2), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(2, image.desc());
        assert_eq!(table_entries(table).len(), entries.len());

        let counter = entry_addr(table, "counter");
        let data = entry_addr(table, "data");
        assert_eq!(
            run(
                &p,
                2,
                entry_addr(table, &kernel_named(&entries, "bump")),
                &[]
            ),
            0
        );
        assert_eq!(
            run(
                &p,
                2,
                entry_addr(table, &kernel_named(&entries, "bump")),
                &[]
            ),
            0
        );
        let mut value = [0i64];
        retrieve(&p, 2, &mut value, counter);
        assert_eq!(value[0], 2);

        // fill(scale): the scalar travels as its bits in a pointer-sized
        // argument; a team region with 4 teams.
        let fill = entry_addr(table, &kernel_named(&entries, "fill"));
        let mut args = [f64::to_bits(0.5) as usize as *mut std::ffi::c_void];
        let mut offsets = [0isize];
        let rc = (p.run_target_team_region)(
            2,
            fill,
            args.as_mut_ptr(),
            offsets.as_mut_ptr(),
            1,
            4,
            8,
            256,
        );
        assert_eq!(rc, OFFLOAD_SUCCESS);
        let mut out = [0f64; 256];
        retrieve(&p, 2, &mut out, data);
        for (i, v) in out.iter().enumerate() {
            assert_eq!(*v, 0.5 * i as f64 + 2.0, "data[{i}]");
        }

        // axpy(x, y, a, n): clang 14 orders this kernel's parameters
        // (n, y, a, x), as the host IR's map types show:
        // `[i64 800 (literal n), i64 35 (tofrom y), i64 800 (literal a), i64 33 (to x)]`.
        let axpy = entry_addr(table, &kernel_named(&entries, "axpy"));
        let n = 100usize;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let (dx, dy) = (alloc(&p, 2, n * 8), alloc(&p, 2, n * 8));
        submit(&p, 2, dx, &x);
        submit(&p, 2, dy, &vec![1.0f64; n]);
        let a = f64::to_bits(3.0) as usize;
        let rc = run(&p, 2, axpy, &[n, dy as usize, a, dx as usize]);
        assert_eq!(rc, OFFLOAD_SUCCESS);
        let mut y = vec![0f64; n];
        retrieve(&p, 2, &mut y, dy);
        for (i, value) in y.iter().enumerate() {
            assert_eq!(*value, 1.0 + 3.0 * i as f64, "y[{i}]");
        }
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}

#[test]
fn hidden_globals_resolve_through_the_image_entry_table() {
    // With -fvisibility=hidden the device globals are not in the dynamic
    // symbol table; only the image's own offload entries lead to them.
    let work = tempfile::tempdir().unwrap();
    let build = compile_openmp(work.path(), "omp", OPENMP_C, &["-fvisibility=hidden"]);
    let bytes = std::fs::read(&build.device_image).unwrap();
    let entries = openmp_entries(&bytes);
    let names: Vec<(&str, usize)> = entries.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let image = ImageFixture::new(bytes, &names);
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `counter` is the
    // 8-byte device global of the table just loaded on device 0, and `bump`
    // takes no arguments.
    unsafe {
        (p.init_device)(0);
        let table = (p.load_binary)(0, image.desc());
        let counter = entry_addr(table, "counter");
        submit(&p, 0, counter, &[40i64]);
        let bump = entry_addr(table, &kernel_named(&entries, "bump"));
        assert_eq!(run(&p, 0, bump, &[]), OFFLOAD_SUCCESS);
        assert_eq!(run(&p, 0, bump, &[]), OFFLOAD_SUCCESS);
        let mut value = [0i64];
        retrieve(&p, 0, &mut value, counter);
        assert_eq!(value[0], 42);
    }
}

/// The plugin under LLVM 14's own libomptarget, which never calls
/// init_plugin/deinit_plugin (lazy initialisation) and uses the async
/// entries. LLVM's runtime dlopens `libomptarget.rtl.x86_64.so` by bare name,
/// so a directory holding only our plugin, first on LD_LIBRARY_PATH, makes
/// it load ours; our debug lines prove it did.
#[test]
fn runs_under_llvm_14_libomptarget() {
    let work = tempfile::tempdir().unwrap();
    let build = compile_openmp(work.path(), "omp", OPENMP_C, &[]);
    let (copy, _p) = host_plugin();
    let image_dir = tempfile::tempdir().unwrap();
    let output = Command::new(&build.program)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:/usr/lib/llvm-14/lib", copy.dir.path().display()),
        )
        .env("LIBOMPTARGET_DEBUG", "1")
        .env("OMP_TARGET_OFFLOAD", "MANDATORY")
        .env("OMPTARGET_HOST_IMAGE_DIR", image_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "program failed:\n{stdout}\n{stderr}"
    );
    // counter was bumped twice; data[i] = 2 i + 2.
    assert!(stdout.contains("counter-data 2.0 512.0"), "{stdout}");
    // sum of 1 + 3 i for i < 1000.
    assert!(
        stdout.contains(&format!("axpy-sum {}", 1000 + 3 * 999 * 1000 / 2)),
        "{stdout}"
    );
    for line in [
        "omptarget-rs plugin x86_64 --> initialising lazily",
        "omptarget-rs plugin x86_64 --> load_binary 0",
        "omptarget-rs plugin x86_64 --> run_target_region_async 0",
        "omptarget-rs plugin x86_64 --> run_target_team_region_async 0",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(
        image_files(image_dir.path()).is_empty(),
        "image files left behind"
    );
}

/// Whether the library `soname` is loaded in this process (RTLD_NOLOAD
/// loads nothing).
fn is_loaded(soname: &std::ffi::CStr) -> bool {
    // SAFETY: RTLD_NOLOAD runs no initialiser; a handle is given back at once.
    unsafe {
        let handle = libc::dlopen(soname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if !handle.is_null() {
            libc::dlclose(handle);
        }
        !handle.is_null()
    }
}

/// A `-fopenmp` kernel built by GCC brings libgomp in; its pool threads
/// keep running libgomp's code after the parallel region, so unloading
/// the image must not unload libgomp (it did, and the process crashed on
/// its next image loads). No other test of this binary uses libgomp.
#[test]
fn an_openmp_runtime_an_image_brings_in_outlives_the_image() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("par.c");
    std::fs::write(
        &src,
        "long threads = 0;\n\
         void par(void) {\n  int n = 0;\n#pragma omp parallel reduction(+ : n)\n  n += 1;\n  threads = n;\n}\n",
    )
    .unwrap();
    let so = work.path().join("par.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-fopenmp"])
        .arg(&src)
        .arg("-o")
        .arg(&so)
        .status()
        .expect("running cc");
    assert!(built.success(), "cc -fopenmp failed");
    assert!(!is_loaded(c"libgomp.so.1"), "loaded before the image");
    let image = ImageFixture::new(std::fs::read(&so).unwrap(), &[("par", 0), ("threads", 8)]);
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives; `image.desc()`
    // is valid while `image` lives; `par` takes no arguments and `threads`
    // is the image's 8-byte global.
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(0, image.desc());
        assert!(!table.is_null());
        assert_eq!(run(&p, 0, entry_addr(table, "par"), &[]), OFFLOAD_SUCCESS);
        let mut threads = [0i64];
        retrieve(&p, 0, &mut threads, entry_addr(table, "threads"));
        assert!(threads[0] >= 1);
        let unload = p.unload_binary.expect("our plugin unloads images");
        assert_eq!(unload(0, image.desc()), OFFLOAD_SUCCESS);
    }
    assert!(
        is_loaded(c"libgomp.so.1"),
        "libgomp was unloaded with the image, under its threads"
    );
}
