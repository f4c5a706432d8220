//! The offload layer over the real runtime and the real host plugin
//! (`libomptarget.rtl.x86_64.so` from this workspace): registration of a
//! binary descriptor holding a clang-14-compiled device object, target
//! regions with mapped, literal and first-private arguments, data
//! environments and updates, the `omp_target_*` API, and a clean shutdown.

use omptarget_test_support as support;

use omptarget::abi::{map_type as mt, AllocKind, BinDesc, OffloadEntry};
use omptarget::image::OwnedImage;
use omptarget::{Config, Runtime};
use omptarget_openmp::{Diagnostic, HostEnv, MapArgs, Offload, Registry, TargetOffloadPolicy};
use std::ffi::c_void;
use std::ptr::null;
use std::sync::Mutex;

struct Host {
    diags: Mutex<Vec<Diagnostic>>,
}

impl HostEnv for Host {
    fn default_device(&self) -> i32 {
        0
    }
    fn global_thread_num(&self) -> i32 {
        0
    }
    fn target_offload_policy(&self) -> TargetOffloadPolicy {
        TargetOffloadPolicy::Mandatory
    }
    fn emit(&self, diagnostic: &Diagnostic) {
        self.diags.lock().unwrap().push(diagnostic.clone());
    }
}

impl Host {
    fn stderr(&self) -> String {
        let diags = std::mem::take(&mut *self.diags.lock().unwrap());
        diags.iter().map(Diagnostic::render).collect()
    }
}

/// A host binary whose one device image is `image`.
struct Binary {
    image: OwnedImage,
    desc: Box<BinDesc>,
}

impl Binary {
    fn new(c_file: &str, entries: &[&str]) -> Binary {
        let elf = std::fs::read(support::clang::build_kernel_image(c_file)).unwrap();
        let image = OwnedImage::new(&elf, entries).unwrap();
        let device_image = image.as_device_image();
        // SAFETY: the image is alive while `Binary` is.
        let (begin, end) = unsafe { ((*device_image).entries_begin, (*device_image).entries_end) };
        let desc = Box::new(BinDesc {
            num_device_images: 1,
            device_images: device_image,
            host_entries_begin: begin,
            host_entries_end: end,
        });
        Binary { image, desc }
    }
    fn desc(&self) -> *mut BinDesc {
        &*self.desc as *const BinDesc as *mut BinDesc
    }
    /// The host entry address of kernel `index` (what `__tgt_target` gets).
    fn entry(&self, index: usize) -> *mut c_void {
        let _ = &self.image;
        // SAFETY: index < entry count.
        unsafe { (*self.desc.host_entries_begin.add(index) as OffloadEntry).addr }
    }
}

#[derive(Default)]
struct Args {
    bases: Vec<*mut c_void>,
    begins: Vec<*mut c_void>,
    sizes: Vec<i64>,
    types: Vec<i64>,
}

impl Args {
    fn push(&mut self, base: *mut c_void, size: i64, map_type: i64) -> &mut Self {
        self.bases.push(base);
        self.begins.push(base);
        self.sizes.push(size);
        self.types.push(map_type);
        self
    }
    /// # Safety
    /// Each argument names host memory as its map type says while the
    /// view is used (`MapArgs::from_raw`).
    unsafe fn view(&mut self) -> MapArgs<'_> {
        // SAFETY: four arrays of `len` elements, borrowed for the view's
        // lifetime; the host memory is our caller's contract.
        unsafe {
            MapArgs::from_raw(
                self.types.len() as i32,
                self.bases.as_mut_ptr(),
                self.begins.as_mut_ptr(),
                self.sizes.as_ptr(),
                self.types.as_ptr(),
                null(),
                null(),
            )
        }
        .unwrap()
    }
}

const LLVM_PLUGIN: &str = "/usr/lib/llvm-14/lib/libomptarget.rtl.x86_64.so";

#[test]
fn offload_through_our_host_plugin() {
    let plugin = support::plugin::host_plugin();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    target_regions_and_data(runtime);
}

#[test]
fn offload_through_llvm_14_x86_64_plugin() {
    assert!(
        std::path::Path::new(LLVM_PLUGIN).is_file(),
        "libomp-14-dev is not installed"
    );
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([LLVM_PLUGIN]) }).unwrap();
    assert_eq!(runtime.device_count(), 4);
    target_regions_and_data(runtime);
}

fn target_regions_and_data(runtime: Runtime) {
    let registry = Registry::new();
    let host = Host {
        diags: Mutex::new(Vec::new()),
    };
    let binary = Binary::new("vec_add.c", &["vec_add"]);
    {
        let off = Offload::new(&registry, &runtime, &host);
        // SAFETY: `binary` owns a valid descriptor and the arrays it points to, alive and
        // unchanged for as long as the runtime uses them in this test.
        unsafe { off.register_lib(binary.desc()) };
        assert_eq!(off.num_devices() as usize, runtime.device_count());

        let n = 1000usize;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let mut c = vec![0f32; n];
        let bytes = (n * 4) as i64;
        let mut args = Args::default();
        args.push(a.as_ptr() as *mut c_void, bytes, mt::TO | mt::TARGET_PARAM)
            .push(b.as_ptr() as *mut c_void, bytes, mt::TO | mt::TARGET_PARAM)
            .push(
                c.as_mut_ptr() as *mut c_void,
                bytes,
                mt::FROM | mt::TARGET_PARAM,
            )
            .push(n as *mut c_void, 8, mt::LITERAL | mt::TARGET_PARAM);
        for device in 0..off.num_devices() as i64 {
            c.iter_mut().for_each(|v| *v = -1.0);
            let rc =
                // SAFETY: `loc` is null; `binary.entry(0)` is a kernel of the registered binary
                // taking the arguments `args` maps, whose arrays stay in place and name live
                // host data of this test.
                unsafe { off.target(null(), device, binary.entry(0), &args.view(), 2, 4, true) };
            assert_eq!(rc, Ok(omptarget::abi::OMP_TGT_SUCCESS));
            assert!(c.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32));
            assert!(runtime
                .device(device as usize)
                .unwrap()
                .mappings()
                .is_empty());
        }

        // First-private inputs: small ones packed into one buffer, large
        // ones in their own; none stay allocated.
        for n in [16usize, 600] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
            let mut c = vec![0f32; n];
            let bytes = (n * 4) as i64;
            let mut args = Args::default();
            args.push(
                a.as_ptr() as *mut c_void,
                bytes,
                mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
            )
            .push(
                b.as_ptr() as *mut c_void,
                bytes,
                mt::PRIVATE | mt::TO | mt::TARGET_PARAM,
            )
            .push(
                c.as_mut_ptr() as *mut c_void,
                bytes,
                mt::FROM | mt::TARGET_PARAM,
            )
            .push(n as *mut c_void, 8, mt::LITERAL | mt::TARGET_PARAM);
            // SAFETY: `loc` is null; `binary.entry(0)` is a kernel of the registered binary
            // taking the arguments `args` maps, whose arrays stay in place and name live host
            // data of this test.
            unsafe { off.target(null(), 0, binary.entry(0), &args.view(), 0, 0, false) }.unwrap();
            assert!(c.iter().enumerate().all(|(i, &v)| v == 1.5 * i as f32));
        }
        assert_eq!(runtime.device(0).unwrap().live_allocations().0, 0);

        // A data environment around two regions, then an update.
        let mut env = Args::default();
        env.push(c.as_mut_ptr() as *mut c_void, bytes, mt::TO | mt::FROM);
        // SAFETY: `loc` is null; `env`'s arrays stay in place for the call and map live host
        // data of this test, as their map types say.
        unsafe { off.target_data_begin(omptarget_openmp::Loc::UNKNOWN, 0, &env.view()) }.unwrap();
        assert_eq!(off.target_is_present(c.as_ptr() as *const c_void, 0), 1);
        let mut twice = Args::default();
        twice
            .push(
                c.as_mut_ptr() as *mut c_void,
                bytes,
                mt::TO | mt::TARGET_PARAM,
            )
            .push(
                c.as_mut_ptr() as *mut c_void,
                bytes,
                mt::TO | mt::TARGET_PARAM,
            )
            .push(
                c.as_mut_ptr() as *mut c_void,
                bytes,
                mt::FROM | mt::TARGET_PARAM,
            )
            .push(n as *mut c_void, 8, mt::LITERAL | mt::TARGET_PARAM);
        // SAFETY: `loc` is null; `binary.entry(0)` is a kernel of the registered binary taking
        // the arguments `twice` maps, whose arrays stay in place and name live host data of
        // this test.
        unsafe { off.target(null(), 0, binary.entry(0), &twice.view(), 0, 0, false) }.unwrap();
        assert_eq!(c[10], 30.0, "inside the data region nothing is copied back");
        let mut update = Args::default();
        update.push(c.as_mut_ptr() as *mut c_void, bytes, mt::FROM);
        // SAFETY: `loc` is null; `update`'s arrays stay in place for the call and map live host
        // data of this test, as their map types say.
        unsafe { off.target_data_update(omptarget_openmp::Loc::UNKNOWN, 0, &update.view()) }
            .unwrap();
        assert_eq!(c[10], 60.0);
        // SAFETY: `loc` is null; `binary.entry(0)` is a kernel of the registered binary taking
        // the arguments `twice` maps, whose arrays stay in place and name live host data of
        // this test.
        unsafe { off.target(null(), 0, binary.entry(0), &twice.view(), 0, 0, false) }.unwrap();
        // SAFETY: `loc` is null; `env`'s arrays stay in place for the call and map live host
        // data of this test, as their map types say.
        unsafe { off.target_data_end(omptarget_openmp::Loc::UNKNOWN, 0, &env.view()) }.unwrap();
        assert_eq!(c[10], 120.0);
        assert_eq!(off.target_is_present(c.as_ptr() as *const c_void, 0), 0);

        // omp_target_* on a real device.
        let initial = off.initial_device();
        let d0 = off.target_alloc(bytes as usize, 0, AllocKind::Default);
        let d1 = off.target_alloc(bytes as usize, 1, AllocKind::Default);
        assert!(!d0.is_null() && !d1.is_null());
        let mut back = vec![0f32; n];
        // SAFETY: `d0`/`d1` are `bytes`-byte allocations of devices 0 and 1, and `a`/`back`
        // host vectors of `bytes` bytes: every copy below stays in those blocks.
        unsafe {
            assert_eq!(
                off.target_memcpy(
                    d0,
                    a.as_ptr() as *const c_void,
                    bytes as usize,
                    0,
                    0,
                    0,
                    initial
                ),
                0
            );
            assert_eq!(off.target_memcpy(d1, d0, bytes as usize, 0, 0, 1, 0), 0);
            assert_eq!(
                off.target_memcpy(
                    back.as_mut_ptr() as *mut c_void,
                    d1,
                    bytes as usize,
                    0,
                    0,
                    initial,
                    1
                ),
                0
            );
        }
        assert_eq!(back, a);
        // Associate the device buffer with `back` and run on it.
        assert_eq!(
            off.target_associate_ptr(back.as_ptr() as *const c_void, d1, bytes as usize, 0, 1),
            0
        );
        assert_eq!(off.target_is_present(back.as_ptr() as *const c_void, 1), 1);
        // SAFETY: `d0` is device 0's allocation, freed once.
        unsafe {
            off.target_free(d0, 0);
        }
        assert_eq!(
            off.target_disassociate_ptr(back.as_ptr() as *const c_void, 1),
            0
        );
        // SAFETY: `d1` is device 1's allocation, freed once (after its association was
        // removed).
        unsafe { off.target_free(d1, 1) };
        // SAFETY: `binary.desc()` is the descriptor registered above, still alive and valid.
        unsafe { off.unregister_lib(binary.desc()) };
        assert_eq!(registry.registered_libs(), 0);
        assert_eq!(host.stderr(), "");
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

/// A device object with a constructor, a global and two kernels, declared
/// in its `omp_offloading_entries` section in host-table order (as clang
/// does for `declare target` code).
const GLOBALS_KERNEL: &str = r#"
#include <stddef.h>
#include <stdint.h>
struct entry { void *addr; const char *name; size_t size; int32_t flags; int32_t reserved; };
int counter = 5;
void init_counter(void) { counter *= 10; }
void bump(intptr_t by) { counter += (int)by; }
void read_counter(int *out) { *out = counter; }
#define ENTRY(sym, size, flags) \
  __attribute__((section("omp_offloading_entries"), used)) \
  struct entry sym##_entry = {(void *)&sym, #sym, size, flags, 0};
ENTRY(init_counter, 0, 2)
ENTRY(counter, sizeof(int), 0)
ENTRY(bump, 0, 0)
ENTRY(read_counter, 0, 0)
"#;

/// Compile [`GLOBALS_KERNEL`] with clang-14 into the test's temp dir.
fn globals_image() -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("offload-kernels");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join(format!("globals-{}.c", std::process::id()));
    let object = source.with_extension("so");
    std::fs::write(&source, GLOBALS_KERNEL).unwrap();
    let status = std::process::Command::new("clang-14")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&object)
        .arg(&source)
        .status()
        .expect("running clang-14");
    assert!(status.success());
    let elf = std::fs::read(&object).unwrap();
    let _ = std::fs::remove_file(&source);
    let _ = std::fs::remove_file(&object);
    elf
}

/// A host binary with a host entry table of our own (kernels keyed by
/// distinct host addresses, the global by the host copy's address).
struct GlobalsBinary {
    _elf: Vec<u64>,
    _names: Vec<std::ffi::CString>,
    entries: Vec<OffloadEntry>,
    image: Box<omptarget::abi::DeviceImage>,
    desc: Box<BinDesc>,
    /// The host copy of `counter`.
    counter: Box<i32>,
    keys: Box<[u8; 4]>,
}

impl GlobalsBinary {
    fn new() -> Box<GlobalsBinary> {
        let elf_bytes = globals_image();
        let mut elf = vec![0u64; elf_bytes.len().div_ceil(8)];
        // SAFETY: `elf` holds at least `elf_bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                elf_bytes.as_ptr(),
                elf.as_mut_ptr().cast::<u8>(),
                elf_bytes.len(),
            )
        };
        let names: Vec<std::ffi::CString> = ["init_counter", "counter", "bump", "read_counter"]
            .iter()
            .map(|n| std::ffi::CString::new(*n).unwrap())
            .collect();
        let mut counter = Box::new(5i32);
        let keys = Box::new([0u8; 4]);
        let addrs = [
            &keys[0] as *const u8 as *mut c_void,
            &mut *counter as *mut i32 as *mut c_void,
            &keys[2] as *const u8 as *mut c_void,
            &keys[3] as *const u8 as *mut c_void,
        ];
        let (sizes, flags) = ([0usize, 4, 0, 0], [2i32, 0, 0, 0]);
        let mut entries: Vec<OffloadEntry> = (0..4)
            .map(|i| OffloadEntry {
                addr: addrs[i],
                name: names[i].as_ptr() as *mut std::ffi::c_char,
                size: sizes[i],
                flags: flags[i],
                reserved: 0,
            })
            .collect();
        let range = entries.as_mut_ptr_range();
        let mut image = Box::new(omptarget::abi::DeviceImage {
            image_start: elf.as_mut_ptr() as *mut c_void,
            image_end: (elf.as_ptr() as usize + elf_bytes.len()) as *mut c_void,
            entries_begin: range.start,
            entries_end: range.end,
        });
        let desc = Box::new(BinDesc {
            num_device_images: 1,
            device_images: &mut *image,
            host_entries_begin: range.start,
            host_entries_end: range.end,
        });
        Box::new(GlobalsBinary {
            _elf: elf,
            _names: names,
            entries,
            image,
            desc,
            counter,
            keys,
        })
    }
    fn desc(&self) -> *mut BinDesc {
        let _ = (&self.image, &self.keys);
        &*self.desc as *const BinDesc as *mut BinDesc
    }
    fn kernel(&self, index: usize) -> *mut c_void {
        self.entries[index].addr
    }
}

fn globals_and_ctors(runtime: Runtime) {
    let registry = Registry::new();
    let host = Host {
        diags: Mutex::new(Vec::new()),
    };
    let mut binary = GlobalsBinary::new();
    {
        let off = Offload::new(&registry, &runtime, &host);
        // SAFETY: `binary` owns a valid descriptor and the arrays it points to, alive and
        // unchanged for as long as the runtime uses them in this test.
        unsafe { off.register_lib(binary.desc()) };
        let counter = &mut *binary.counter as *mut i32 as *mut c_void;
        // Not loaded yet: the global is not mapped.
        assert_eq!(off.target_is_present(counter, 0), 0);

        let mut out = 0i32;
        let mut read = Args::default();
        read.push(
            &mut out as *mut i32 as *mut c_void,
            4,
            mt::FROM | mt::TARGET_PARAM,
        );
        // SAFETY: `loc` is null; `binary.kernel(3)` is a kernel of the registered binary taking
        // the arguments `read` maps, whose arrays stay in place and name live host data of this
        // test.
        unsafe { off.target(null(), 0, binary.kernel(3), &read.view(), 0, 0, false) }.unwrap();
        assert_eq!(out, 50, "the constructor ran once before the first region");
        assert_eq!(off.target_is_present(counter, 0), 1);

        let mut bump = Args::default();
        bump.push(7 as *mut c_void, 8, mt::LITERAL | mt::TARGET_PARAM);
        // SAFETY: `loc` is null; `binary.kernel(2)` is a kernel of the registered binary taking
        // the arguments `bump` maps, whose arrays stay in place and name live host data of this
        // test.
        unsafe { off.target(null(), 0, binary.kernel(2), &bump.view(), 1, 1, true) }.unwrap();
        let mut update = Args::default();
        update.push(counter, 4, mt::FROM);
        // SAFETY: `loc` is null; `update`'s arrays stay in place for the call and map live host
        // data of this test, as their map types say.
        unsafe { off.target_data_update(omptarget_openmp::Loc::UNKNOWN, 0, &update.view()) }
            .unwrap();
        assert_eq!(*binary.counter, 57);
        // to: the host value goes to the device copy.
        *binary.counter = 100;
        let mut to = Args::default();
        to.push(counter, 4, mt::TO);
        // SAFETY: `loc` is null; `to`'s arrays stay in place for the call and map live host
        // data of this test, as their map types say.
        unsafe { off.target_data_update(omptarget_openmp::Loc::UNKNOWN, 0, &to.view()) }.unwrap();
        // SAFETY: `loc` is null; `binary.kernel(3)` is a kernel of the registered binary taking
        // the arguments `read` maps, whose arrays stay in place and name live host data of this
        // test.
        unsafe { off.target(null(), 0, binary.kernel(3), &read.view(), 0, 0, false) }.unwrap();
        assert_eq!(out, 100);
        // Device 1 has its own copy, constructed on its first use.
        // SAFETY: `loc` is null; `binary.kernel(3)` is a kernel of the registered binary taking
        // the arguments `read` maps, whose arrays stay in place and name live host data of this
        // test.
        unsafe { off.target(null(), 1, binary.kernel(3), &read.view(), 0, 0, false) }.unwrap();
        assert_eq!(out, 50);

        // SAFETY: `binary.desc()` is the descriptor registered above, still alive and valid.
        unsafe { off.unregister_lib(binary.desc()) };
        assert_eq!(off.target_is_present(counter, 0), 0, "globals unmapped");
        assert_eq!(host.stderr(), "");
    }
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn globals_and_ctors_through_our_host_plugin() {
    let plugin = support::plugin::host_plugin();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    globals_and_ctors(runtime);
}

#[test]
fn globals_and_ctors_through_llvm_14_x86_64_plugin() {
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([LLVM_PLUGIN]) }).unwrap();
    globals_and_ctors(runtime);
}
