//! The runtime -> plugin half of the ABI, against LLVM 14's own x86_64
//! plugin (`/usr/lib/llvm-14/lib/libomptarget.rtl.x86_64.so`).
//!
//! The fixture is linked with clang 14; its device image and host entries
//! are handed to LLVM's plugin through this crate's `DeviceImage`,
//! `OffloadEntryV1` and plugin function types. The `TargetTable` the plugin
//! returns must list every entry, and the two kernels must run through
//! `run_target_team_region` / `run_target_region` and compute the right
//! numbers. Clang does not emit `__tgt_target_table` or `__tgt_async_info`,
//! so this is where `TargetTable` is checked.

use crate::common::elf::Elf;
use core::ffi::{c_char, c_void, CStr};
use core::mem::offset_of;
use omptarget_abi::plugin::{self, names};
use omptarget_abi::{
    declare_target, AllocKind, AsyncInfo, BinDesc, DeviceImage, OffloadEntryV1, TargetTable,
    OFFLOAD_SUCCESS,
};
use std::ffi::CString;
use std::path::Path;

const LLVM14_PLUGIN: &str = "/usr/lib/llvm-14/lib/libomptarget.rtl.x86_64.so";

/// An entry read from the linked fixture (names owned here).
struct HostEntry {
    name: CString,
    size: usize,
    flags: i32,
}

/// The device image bytes and the host entries of a clang-14 linked fixture.
fn fixture_image_and_entries(lib: &Elf) -> (Vec<u8>, Vec<HostEntry>) {
    let (desc, _) = lib.symbol(".omp_offloading.descriptor").unwrap();
    let images = lib.pointer(desc + offset_of!(BinDesc, device_images) as u64);
    let start = lib.pointer(images + offset_of!(DeviceImage, image_start) as u64);
    let end = lib.pointer(images + offset_of!(DeviceImage, image_end) as u64);
    let begin = lib.pointer(desc + offset_of!(BinDesc, host_entries_begin) as u64);
    let stop = lib.pointer(desc + offset_of!(BinDesc, host_entries_end) as u64);
    let stride = core::mem::size_of::<OffloadEntryV1>() as u64;
    let entries = (begin..stop)
        .step_by(stride as usize)
        .map(|e| HostEntry {
            name: CString::new(lib.c_str(lib.pointer(e + offset_of!(OffloadEntryV1, name) as u64)))
                .unwrap(),
            size: lib.u64(e + offset_of!(OffloadEntryV1, size) as u64) as usize,
            flags: lib.u32(e + offset_of!(OffloadEntryV1, flags) as u64) as i32,
        })
        .collect();
    (lib.bytes(start, end - start), entries)
}

#[test]
fn llvm14_plugin_loads_and_runs_the_fixture_through_our_types() {
    let Some(clang) =
        crate::common::clang_with_tools(14, &["clang-offload-wrapper", "clang-offload-bundler"])
    else {
        return;
    };
    if !Path::new(LLVM14_PLUGIN).is_file() {
        assert!(
            !crate::common::in_ci(),
            "{LLVM14_PLUGIN} missing (libomp-14-dev)"
        );
        eprintln!("SKIPPED: {LLVM14_PLUGIN} not found (install libomp-14-dev)");
        return;
    }
    let dir = crate::common::tempdir();
    let lib = Elf::read(&clang.link_fixture(dir.path()));
    let (mut image, all_host) = fixture_image_and_entries(&lib);
    // LLVM 14's plugin returns the image's own entry section, sized by the
    // host count, so it over-reads when the counts differ; and they do
    // differ: the device emits no entry for `declare target link`
    // variables (see abi_layout's linked_library). Give it the others.
    let (link, host): (Vec<HostEntry>, Vec<HostEntry>) = all_host
        .into_iter()
        .partition(|h| h.flags & declare_target::LINK != 0);
    assert_eq!(link.len(), 1, "the fixture has one link variable");
    let image_path = dir.path().join("device-image.so");
    std::fs::write(&image_path, &image).unwrap();
    let image_elf = Elf::read(&image_path);

    // Host entries as a host program's would be: one distinct host address
    // per entry (the plugin only reads names and counts).
    let mut anchors = vec![0u8; host.len()];
    let mut entries: Vec<OffloadEntryV1> = host
        .iter()
        .zip(anchors.iter_mut())
        .map(|(h, anchor)| OffloadEntryV1 {
            addr: anchor as *mut u8 as *mut c_void,
            name: h.name.as_ptr() as *mut c_char,
            size: h.size,
            flags: h.flags,
            reserved: 0,
        })
        .collect();
    let range = entries.as_mut_ptr_range();
    let image_range = image.as_mut_ptr_range();
    let mut device_image = DeviceImage {
        image_start: image_range.start.cast(),
        image_end: image_range.end.cast(),
        entries_begin: range.start,
        entries_end: range.end,
    };

    // SAFETY: LLVM 14's plugin exports these entries with exactly the
    // signatures of `omptarget_abi::plugin`; that is what is under test.
    // Every pointer handed over outlives the calls (locals of this test).
    unsafe {
        let plugin = libloading::Library::new(LLVM14_PLUGIN).expect("dlopen LLVM 14 plugin");
        let is_valid: libloading::Symbol<plugin::IsValidBinaryFn> =
            plugin.get(names::IS_VALID_BINARY.as_bytes()).unwrap();
        let number_of_devices: libloading::Symbol<plugin::NumberOfDevicesFn> =
            plugin.get(names::NUMBER_OF_DEVICES.as_bytes()).unwrap();
        let init_device: libloading::Symbol<plugin::InitDeviceFn> =
            plugin.get(names::INIT_DEVICE.as_bytes()).unwrap();
        let load_binary: libloading::Symbol<plugin::LoadBinaryFn> =
            plugin.get(names::LOAD_BINARY.as_bytes()).unwrap();
        let data_alloc: libloading::Symbol<plugin::DataAllocFn> =
            plugin.get(names::DATA_ALLOC.as_bytes()).unwrap();
        let data_submit: libloading::Symbol<plugin::DataSubmitFn> =
            plugin.get(names::DATA_SUBMIT.as_bytes()).unwrap();
        let data_retrieve: libloading::Symbol<plugin::DataRetrieveFn> =
            plugin.get(names::DATA_RETRIEVE.as_bytes()).unwrap();
        let data_delete: libloading::Symbol<plugin::DataDeleteFn> =
            plugin.get(names::DATA_DELETE.as_bytes()).unwrap();
        let run_team: libloading::Symbol<plugin::RunTargetTeamRegionFn> = plugin
            .get(names::RUN_TARGET_TEAM_REGION.as_bytes())
            .unwrap();
        let run_region: libloading::Symbol<plugin::RunTargetRegionFn> =
            plugin.get(names::RUN_TARGET_REGION.as_bytes()).unwrap();

        assert_eq!(is_valid(&mut device_image), 1, "x86_64 image accepted");
        assert!(number_of_devices() >= 1);
        assert_eq!(init_device(0), OFFLOAD_SUCCESS);
        let table: *mut TargetTable = load_binary(0, &mut device_image);
        assert!(!table.is_null(), "load_binary failed");
        let table = &*table;
        let count = table.entries_end.offset_from(table.entries_begin);
        assert_eq!(
            count,
            host.len() as isize,
            "one target entry per host entry"
        );

        // The table lists the device's own entries, in host order.
        let device: Vec<&OffloadEntryV1> = (0..count)
            .map(|i| &*table.entries_begin.offset(i))
            .collect();
        let device_addr = |name: &str| -> *mut c_void {
            let e = device
                .iter()
                .find(|e| CStr::from_ptr(e.name).to_str() == Ok(name))
                .unwrap_or_else(|| panic!("{name} missing from the target table"));
            assert!(!e.addr.is_null(), "{name} has no device address");
            e.addr
        };
        for (h, d) in host.iter().zip(&device) {
            assert_eq!(CStr::from_ptr(d.name), h.name.as_c_str());
            assert_eq!((d.size, d.flags), (h.size, h.flags));
            println!("target entry {:?} at {:p} size {}", h.name, d.addr, d.size);
        }
        let kernel = |part: &str| -> *mut c_void {
            let h = host
                .iter()
                .find(|h| h.name.to_str().unwrap().contains(part))
                .unwrap();
            device_addr(h.name.to_str().unwrap())
        };

        // `declare target link`: the runtime points the device's reference
        // pointer at the data; do that by hand with a 3-long buffer. The
        // pointer has no entry, so locate it as a runtime must: by symbol,
        // offset by the image's load bias (taken from `fixture_global`).
        let symbol_in_image = |n: &str| image_elf.symbol(n).unwrap().0 as isize;
        let bias = device_addr("fixture_global") as isize - symbol_in_image("fixture_global");
        let ref_ptr = (bias + symbol_in_image(link[0].name.to_str().unwrap())) as *mut c_void;
        let mut linked = [7i64, 0, 0];
        let linked_ptr: *mut c_void = linked.as_mut_ptr().cast();
        assert_eq!(
            data_submit(0, ref_ptr, &linked_ptr as *const _ as *mut c_void, 8),
            OFFLOAD_SUCCESS
        );

        // fixture_teams(a, n): a[i] += fixture_global[0] (0) + linked[0] (7).
        let mut a = [1i32, 2, 3, 4];
        let bytes = core::mem::size_of_val(&a) as i64;
        let dev_a = data_alloc(0, bytes, a.as_mut_ptr().cast(), AllocKind::Default as i32);
        assert!(!dev_a.is_null());
        assert_eq!(
            data_submit(0, dev_a, a.as_mut_ptr().cast(), bytes),
            OFFLOAD_SUCCESS
        );
        // Arguments as LLVM 14's runtime passes them: n by value in a
        // pointer-sized slot, then the device pointer; offsets 0.
        let mut args: [*mut c_void; 2] = [a.len() as *mut c_void, dev_a];
        let mut offsets = [0isize; 2];
        let rc = run_team(
            0,
            kernel("_fixture_teams_l"),
            args.as_mut_ptr(),
            offsets.as_mut_ptr(),
            2,
            2,
            8,
            0,
        );
        assert_eq!(rc, OFFLOAD_SUCCESS);
        // fixture_deferred(a, n): a[i] *= 2.
        let rc = run_region(
            0,
            kernel("_fixture_deferred_l"),
            args.as_mut_ptr(),
            offsets.as_mut_ptr(),
            2,
        );
        assert_eq!(rc, OFFLOAD_SUCCESS);
        assert_eq!(
            data_retrieve(0, a.as_mut_ptr().cast(), dev_a, bytes),
            OFFLOAD_SUCCESS
        );
        assert_eq!(data_delete(0, dev_a), OFFLOAD_SUCCESS);
        assert_eq!(a, [16, 18, 20, 22], "(a + 7) * 2 computed on the device");
        // The plugin keeps the image loaded until its own (static) teardown;
        // leave the library mapped so the table stays valid to the end.
        std::mem::forget(plugin);
    }
}

/// `__tgt_async_info` is `{ void *Queue; }` in every LLVM release; no
/// compiler emits it and LLVM 14's x86_64 plugin has no async entries, so
/// only its shape can be checked.
#[test]
fn async_info_is_one_queue_pointer() {
    let layout = rust_layout!(AsyncInfo { queue });
    assert_eq!(layout.size, core::mem::size_of::<*mut c_void>());
    assert_eq!(layout.align, core::mem::align_of::<*mut c_void>());
    assert_eq!(layout.offset("queue"), 0);
}

/// `__tgt_target_table` is `{ __tgt_offload_entry *EntriesBegin, *EntriesEnd; }`.
#[test]
fn target_table_is_two_entry_pointers() {
    let layout = rust_layout!(TargetTable {
        entries_begin,
        entries_end
    });
    assert_eq!(layout.size, 16);
    assert_eq!(layout.offset("entries_begin"), 0);
    assert_eq!(layout.offset("entries_end"), 8);
}
