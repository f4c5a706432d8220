//! Shared by the host plugin's integration tests (the modules of this
//! binary).

pub use omptarget_abi::{OffloadEntry, TargetTable, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
pub use omptarget_plugin_kit::testing::*;
use std::ffi::{c_void, CStr};
use std::path::PathBuf;

/// The host plugin as cargo built it (crate `omptarget-plugin-host-rtl`,
/// `ffi/plugin/host/rtl`: this backend behind the kit's entries).
pub fn host_so() -> PathBuf {
    built_cdylib("omptarget-plugin-host-rtl", "libomptarget_rtl_x86_64.so")
}

/// A private copy of the host plugin, opened: its own plugin state.
pub fn host_plugin() -> (IsolatedCopy, Plugin) {
    let copy = isolated_copy(&host_so(), "libomptarget.rtl.x86_64.so");
    let plugin = Plugin::open(&copy.path);
    (copy, plugin)
}

/// Plain C kernels: every parameter is pointer-sized, as the plugin ABI
/// passes them.
pub const KERNELS_C: &str = r#"
long counter = 0;

void vadd(double *a, double *b, double *c, long n) {
  for (long i = 0; i < n; i++) c[i] = a[i] + b[i];
}

void bump(void) { counter += 1; }

/* 16 arguments: 6 go in registers, 10 on the stack. The weights make a
   swapped or dropped argument visible. */
void sum16(long *out, long a1, long a2, long a3, long a4, long a5, long a6,
           long a7, long a8, long a9, long a10, long a11, long a12, long a13,
           long a14, long a15) {
  *out = 1*a1 + 2*a2 + 3*a3 + 4*a4 + 5*a5 + 6*a6 + 7*a7 + 8*a8 + 9*a9 +
         10*a10 + 11*a11 + 12*a12 + 13*a13 + 14*a14 + 15*a15;
}

void write42(long *p) { *p = 42; }
"#;

/// The host entry table of [`KERNELS_C`].
pub const KERNEL_ENTRIES: &[(&str, usize)] = &[
    ("vadd", 0),
    ("bump", 0),
    ("sum16", 0),
    ("write42", 0),
    ("counter", 8),
];

/// Compile [`KERNELS_C`] into `dir` and wrap it as a registered image.
pub fn kernels_image(dir: &std::path::Path) -> ImageFixture {
    let so = compile_shared(dir, "kernels.so", KERNELS_C);
    ImageFixture::new(std::fs::read(so).unwrap(), KERNEL_ENTRIES)
}

/// The entries of a target table.
///
/// # Safety
/// `table` is a live table returned by `load_binary`.
pub unsafe fn table_entries<'a>(table: *mut TargetTable) -> &'a [OffloadEntry] {
    assert!(!table.is_null(), "load_binary failed");
    // SAFETY: our caller's contract: `table` (not null, checked above) is a
    // live table `load_binary` returned, which the plugin keeps until the
    // image is unloaded.
    let t = unsafe { &*table };
    // SAFETY: a live table's `entries_begin..entries_end` is one array of
    // entries the plugin allocated, so both point into (or one past) it.
    let len = unsafe { t.entries_end.offset_from(t.entries_begin) } as usize;
    // SAFETY: that array holds `len` initialised entries and lives as long
    // as the table (our caller's contract).
    unsafe { std::slice::from_raw_parts(t.entries_begin, len) }
}

/// The device address of entry `name` in `table`.
///
/// # Safety
/// As [`table_entries`].
pub unsafe fn entry_addr(table: *mut TargetTable, name: &str) -> *mut c_void {
    // SAFETY: our caller's contract is `table_entries`'s.
    unsafe { table_entries(table) }
        .iter()
        // SAFETY: every entry of a live table names itself with a
        // NUL-terminated string the plugin keeps with the table.
        .find(|e| unsafe { CStr::from_ptr(e.name) }.to_str() == Ok(name))
        .unwrap_or_else(|| panic!("no entry {name} in the target table"))
        .addr
}

/// Run a kernel with `args` (offsets 0) as a plain target region.
///
/// # Safety
/// `entry` is a kernel of device `dev` taking `args.len()` pointer-sized
/// arguments.
pub unsafe fn run(plugin: &Plugin, dev: i32, entry: *mut c_void, args: &[usize]) -> i32 {
    let mut args: Vec<*mut c_void> = args.iter().map(|&a| a as *mut c_void).collect();
    let mut offsets = vec![0isize; args.len()];
    // SAFETY: `args` and `offsets` both hold `args.len()` elements, as the
    // count passed says; our caller's contract makes `entry` a kernel of
    // `dev` taking exactly those pointer-sized arguments.
    unsafe {
        (plugin.run_target_region)(
            dev,
            entry,
            args.as_mut_ptr(),
            offsets.as_mut_ptr(),
            args.len() as i32,
        )
    }
}

/// Allocate `size` bytes on `dev`, asserting success.
pub fn alloc(plugin: &Plugin, dev: i32, size: usize) -> *mut c_void {
    // SAFETY: data_alloc with a null host pointer only allocates; no
    // memory of ours is read or written.
    let p = unsafe { (plugin.data_alloc)(dev, size as i64, std::ptr::null_mut(), 3) };
    assert!(!p.is_null(), "data_alloc of {size} bytes failed");
    p
}

/// Copy `value` into device memory at `tgt`.
///
/// # Safety
/// `tgt` is device memory of `dev` (from `alloc` or a loaded table's
/// global) writable for `size_of_val(value)` bytes: the host plugin copies
/// without checking the range.
pub unsafe fn submit<T: Copy>(plugin: &Plugin, dev: i32, tgt: *mut c_void, value: &[T]) {
    let size = std::mem::size_of_val(value) as i64;
    // SAFETY: `value` is readable for `size` bytes (it is a slice of that
    // size); `tgt` is writable for as many by our caller's contract.
    let rc = unsafe { (plugin.data_submit)(dev, tgt, value.as_ptr() as *mut c_void, size) };
    assert_eq!(rc, OFFLOAD_SUCCESS);
}

/// Copy device memory at `tgt` into `out`.
///
/// # Safety
/// `tgt` is device memory of `dev` readable for `size_of_val(out)` bytes,
/// holding valid values of `T`: the host plugin copies without checking.
pub unsafe fn retrieve<T: Copy>(plugin: &Plugin, dev: i32, out: &mut [T], tgt: *mut c_void) {
    let size = std::mem::size_of_val(out) as i64;
    // SAFETY: `out` is writable for `size` bytes (a slice of that size);
    // `tgt` is readable for as many, holding `T`s, by our caller's contract.
    let rc = unsafe { (plugin.data_retrieve)(dev, out.as_mut_ptr() as *mut c_void, tgt, size) };
    assert_eq!(rc, OFFLOAD_SUCCESS);
}

/// Files in `dir` whose name starts with `omptarget-host-image-`.
pub fn image_files(dir: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("omptarget-host-image-"))
        })
        .collect()
}
