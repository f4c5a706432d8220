//! One real kernel run under valgrind: a C driver dlopens the plugin,
//! runs a vector add through the entries, tears everything down through
//! the lifecycle entries and dlcloses the plugin; valgrind must report no
//! memory errors and no leaks.

use crate::helpers::*;
use std::process::Command;

const DRIVER_C: &str = r#"
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { void *addr; char *name; size_t size; int32_t flags; int32_t reserved; } entry_t;
typedef struct { void *start, *end; entry_t *entries_begin, *entries_end; } image_t;
typedef struct { entry_t *begin, *end; } table_t;
typedef int32_t (*fn_void)(void);
typedef int32_t (*fn_dev)(int32_t);
typedef table_t *(*fn_load)(int32_t, image_t *);
typedef int32_t (*fn_unload)(int32_t, image_t *);
typedef void *(*fn_alloc)(int32_t, int64_t, void *, int32_t);
typedef int32_t (*fn_delete)(int32_t, void *);
typedef int32_t (*fn_copy)(int32_t, void *, void *, int64_t);
typedef int32_t (*fn_run)(int32_t, void *, void **, ptrdiff_t *, int32_t);

#define SYM(T, name) T name = (T)dlsym(lib, "__tgt_rtl_" #name); \
  if (!name) { fprintf(stderr, "missing " #name "\n"); return 2; }
#define CHECK(x) if (!(x)) { fprintf(stderr, "failed: " #x "\n"); return 3; }

int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  SYM(fn_void, init_plugin);
  SYM(fn_void, deinit_plugin);
  SYM(fn_void, number_of_devices);
  SYM(fn_dev, init_device);
  SYM(fn_dev, deinit_device);
  SYM(fn_load, load_binary);
  SYM(fn_unload, unload_binary);
  SYM(fn_alloc, data_alloc);
  SYM(fn_delete, data_delete);
  SYM(fn_copy, data_submit);
  SYM(fn_copy, data_retrieve);
  SYM(fn_run, run_target_region);

  FILE *f = fopen(argv[2], "rb");
  CHECK(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *bytes = malloc(size);
  CHECK(fread(bytes, 1, size, f) == (size_t)size);
  fclose(f);
  entry_t entries[1] = {{(void *)1, "vadd", 0, 0, 0}};
  image_t image = {bytes, bytes + size, entries, entries + 1};

  CHECK(init_plugin() == 0);
  CHECK(number_of_devices() == 4);
  CHECK(init_device(0) == 0);
  table_t *table = load_binary(0, &image);
  CHECK(table && table->end - table->begin == 1);
  enum { N = 4096 };
  double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 2 * i; }
  void *da = data_alloc(0, N * 8, NULL, 0), *db = data_alloc(0, N * 8, NULL, 0),
       *dc = data_alloc(0, N * 8, NULL, 0);
  CHECK(da && db && dc);
  CHECK(data_submit(0, da, a, N * 8) == 0 && data_submit(0, db, b, N * 8) == 0);
  void *args[4] = {da, db, dc, (void *)(intptr_t)N};
  ptrdiff_t offsets[4] = {0};
  CHECK(run_target_region(0, table->begin[0].addr, args, offsets, 4) == 0);
  CHECK(data_retrieve(0, c, dc, N * 8) == 0);
  for (int i = 0; i < N; i++) CHECK(c[i] == 3.0 * i);
  CHECK(data_delete(0, da) == 0 && data_delete(0, db) == 0);
  /* dc is left for deinit_device to free. */
  CHECK(unload_binary(0, &image) == 0);
  CHECK(load_binary(0, &image) != NULL); /* left for deinit_device */
  CHECK(deinit_device(0) == 0);
  CHECK(deinit_plugin() == 0);
  CHECK(dlclose(lib) == 0);
  free(a); free(b); free(c); free(bytes);
  puts("driver ok");
  return 0;
}
"#;

#[test]
fn vector_add_is_clean_under_valgrind() {
    let work = tempfile::tempdir().unwrap();
    compile_shared(work.path(), "kernels.so", KERNELS_C);
    std::fs::write(work.path().join("driver.c"), DRIVER_C).unwrap();
    clang(
        work.path(),
        &["-O1", "-gdwarf-4", "driver.c", "-o", "driver", "-ldl"],
    );
    let (copy, _p) = host_plugin();
    let output = Command::new("valgrind")
        .args([
            "--leak-check=full",
            "--error-exitcode=1",
            "--errors-for-leak-kinds=definite,possible",
        ])
        .arg(work.path().join("driver"))
        .arg(&copy.path)
        .arg(work.path().join("kernels.so"))
        .output()
        .expect("running valgrind (is it installed?)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "valgrind failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("driver ok"), "{stdout}");
    assert!(stderr.contains("ERROR SUMMARY: 0 errors"), "{stderr}");
    assert!(
        stderr.contains("All heap blocks were freed")
            || stderr.contains("definitely lost: 0 bytes"),
        "{stderr}"
    );
    // Figures for the record (cargo test -- --nocapture).
    for line in stderr.lines().filter(|l| {
        [
            "in use at exit",
            "total heap usage",
            "definitely lost",
            "indirectly lost",
            "possibly lost",
            "still reachable",
            "ERROR SUMMARY",
        ]
        .iter()
        .any(|k| l.contains(k))
    }) {
        println!("{line}");
    }
}
