//! The ABI types against what clang 14, 19 and 22 (and 16 when present)
//! actually emit for an offload program.
//!
//! For each compiler:
//! * `offload_entry`: the `__tgt_offload_entry` struct clang prints, laid
//!   out by LLVM itself, equals `OffloadEntryV1` (clang <= 19) or
//!   `OffloadEntryV2` (clang >= 20) field by field;
//! * `kernel_args`: the `__tgt_kernel_arguments` block and the version
//!   clang stores into it; the values stored show which field is which;
//! * `kernel_signature`: version-3 compilers give device kernels a leading
//!   `dyn_ptr` parameter that the host fallback lacks;
//! * `linked_library`: in a linked library, `.omp_offloading.descriptor`
//!   read as `BinDesc`, its `DeviceImage`s and every offload entry read
//!   through our offsets hold exactly what they must (sizes, flags, names,
//!   pointers to the right symbols).
//!
//! Missing compilers skip locally and fail under `CI`; see `crate::common::clang`.

use crate::common::elf::Elf;
use crate::common::ir;
use crate::common::{assert_same_layout, Clang, RustLayout};
use object::Object;
use omptarget_abi::kernel_args::{KERNEL_ARGS_V1, KERNEL_ARGS_V2, KERNEL_ARGS_V3};
use omptarget_abi::{
    declare_target, BinDesc, DeviceImage, KernelArgsV1, KernelArgsV2, KernelArgsV3, KernelFlags,
    OffloadEntryV1, OffloadEntryV2,
};

fn entry_v1() -> RustLayout {
    rust_layout!(OffloadEntryV1 {
        addr,
        name,
        size,
        flags,
        reserved
    })
}

fn entry_v2() -> RustLayout {
    rust_layout!(OffloadEntryV2 {
        reserved,
        version,
        kind,
        flags,
        address,
        symbol_name,
        size,
        data,
        aux_addr
    })
}

fn kernel_args(version: u32) -> RustLayout {
    match version {
        KERNEL_ARGS_V1 => rust_layout!(KernelArgsV1 {
            version,
            num_args,
            arg_base_ptrs,
            arg_ptrs,
            arg_sizes,
            arg_types,
            arg_names,
            arg_mappers,
            tripcount
        }),
        KERNEL_ARGS_V2 => rust_layout!(KernelArgsV2 {
            version,
            num_args,
            arg_base_ptrs,
            arg_ptrs,
            arg_sizes,
            arg_types,
            arg_names,
            arg_mappers,
            tripcount,
            flags,
            num_teams,
            thread_limit,
            dyn_cgroup_mem
        }),
        KERNEL_ARGS_V3 => rust_layout!(KernelArgsV3 {
            version,
            num_args,
            arg_base_ptrs,
            arg_ptrs,
            arg_sizes,
            arg_types,
            arg_names,
            arg_mappers,
            tripcount,
            flags,
            num_teams,
            thread_limit,
            dyn_cgroup_mem
        }),
        v => panic!("clang stored kernel-args version {v}, which this crate does not define"),
    }
}

/// Which entry layout a clang release emits, and the section it uses.
struct EntryFlavour {
    layout: RustLayout,
    section: &'static str,
    v2: bool,
}

fn entry_flavour(clang: &Clang) -> EntryFlavour {
    if clang.major >= 20 {
        EntryFlavour {
            layout: entry_v2(),
            section: "llvm_offload_entries",
            v2: true,
        }
    } else {
        EntryFlavour {
            layout: entry_v1(),
            section: "omp_offloading_entries",
            v2: false,
        }
    }
}

fn offload_entry(major: u32) {
    let Some(clang) = crate::common::clang(major) else {
        return;
    };
    let dir = crate::common::tempdir();
    let host = clang.host_ir(dir.path());
    let flavour = entry_flavour(&clang);
    let llvm = ir::llvm_layout(&clang, dir.path(), &host, "__tgt_offload_entry");
    assert_same_layout(
        &format!("clang {major} __tgt_offload_entry"),
        &llvm,
        &flavour.layout,
    );
    let entries: Vec<&str> = host
        .lines()
        .filter(|l| l.contains("offloading.entry.") && l.contains(" section "))
        .collect();
    assert_eq!(entries.len(), 4, "the fixture has 4 offload entries");
    for l in entries {
        assert!(
            l.contains(&format!("section \"{}\"", flavour.section)),
            "clang {major} put an entry outside {}: {l}",
            flavour.section
        );
    }
}

fn kernel_args_block(major: u32) {
    let Some(clang) = crate::common::clang(major) else {
        return;
    };
    let dir = crate::common::tempdir();
    let host = clang.host_ir(dir.path());
    let Some(version) = kernel_args_version(&host) else {
        // Before LLVM 16 there is no argument block: the host calls the
        // legacy entry points, which the shim must therefore export.
        assert!(major < 16, "clang {major} did not call __tgt_target_kernel");
        assert!(ir::struct_body(&host, "__tgt_kernel_arguments").is_none());
        for legacy in [
            "@__tgt_target_teams_mapper(",
            "@__tgt_target_nowait_mapper(",
        ] {
            assert!(
                host.contains(&format!("call i32 {legacy}")),
                "clang {major} does not call {legacy}"
            );
        }
        println!("clang {major}: no kernel-args block; legacy __tgt_target_*_mapper calls");
        return;
    };
    println!("clang {major} stores kernel-args version {version}");
    let llvm = ir::llvm_layout(&clang, dir.path(), &host, "__tgt_kernel_arguments");
    let ours = kernel_args(version);
    assert_same_layout(
        &format!("clang {major} __tgt_kernel_arguments v{version}"),
        &llvm,
        &ours,
    );
    let index = |field: &str| ours.fields.iter().position(|f| f.0 == field).unwrap() as u32;

    // The values clang stores show which field is which. A launch is the
    // function calling __tgt_target_kernel with the region's id (a nowait
    // region launches from its task's entry function).
    let launch = |region: &str| -> Vec<(u32, String)> {
        let f = ir::functions(&host)
            .into_iter()
            .find(|(_, body)| {
                body.iter().any(|l| {
                    l.contains("call i32 @__tgt_target_kernel(")
                        && l.contains(&format!("_{region}_l"))
                })
            })
            .unwrap_or_else(|| panic!("no launch of {region} in the host IR"));
        ir::stores_into_struct(&f.1, "__tgt_kernel_arguments")
    };
    let stored = |stores: &[(u32, String)], field: &str| -> String {
        stores
            .iter()
            .find(|(i, _)| *i == index(field))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("clang {major} stored nothing into {field}"))
    };
    let teams = launch("fixture_teams");
    let deferred = launch("fixture_deferred");
    assert_eq!(
        stored(&teams, "num_teams"),
        "[3 x i32] [i32 2, i32 0, i32 0]"
    );
    assert_eq!(
        stored(&teams, "thread_limit"),
        "[3 x i32] [i32 8, i32 0, i32 0]"
    );
    let flags = |s: String| KernelFlags(s.strip_prefix("i64 ").unwrap().parse().unwrap());
    assert!(!flags(stored(&teams, "flags")).no_wait());
    assert!(
        flags(stored(&deferred, "flags")).no_wait(),
        "nowait sets Flags.NoWait"
    );
    assert_eq!(stored(&teams, "dyn_cgroup_mem"), "i32 0");
    // A worksharing loop passes its computed trip count; a plain region 0.
    assert_ne!(stored(&teams, "tripcount"), "i64 0");
    assert_eq!(stored(&deferred, "tripcount"), "i64 0");
    // `a` and `n` (plus captured globals' pointers where clang maps them).
    let num_args: u32 = stored(&teams, "num_args")
        .strip_prefix("i32 ")
        .unwrap()
        .parse()
        .unwrap();
    assert!(num_args >= 2, "teams region maps at least a[0:n] and n");
}

/// The version stored into field 0 of the kernel-args block, if any.
fn kernel_args_version(host: &str) -> Option<u32> {
    ir::struct_body(host, "__tgt_kernel_arguments")?;
    let mut versions: Vec<u32> = ir::functions(host)
        .iter()
        .flat_map(|(_, body)| ir::stores_into_struct(body, "__tgt_kernel_arguments"))
        .filter(|(i, _)| *i == 0)
        .map(|(_, v)| v.strip_prefix("i32 ").unwrap().parse().unwrap())
        .collect();
    versions.dedup();
    assert_eq!(versions.len(), 1, "one version per compiler: {versions:?}");
    Some(versions[0])
}

fn kernel_signature(major: u32) {
    let Some(clang) = crate::common::clang(major) else {
        return;
    };
    let dir = crate::common::tempdir();
    let host = clang.host_ir(dir.path());
    let device = clang.device_ir(dir.path());
    let version = kernel_args_version(&host).unwrap_or(0);
    let kernels = |module: &str, internal: bool| -> Vec<(String, Vec<String>)> {
        ir::functions(module)
            .into_iter()
            .filter(|(h, _)| {
                let name = ir::function_name(h);
                name.starts_with("__omp_offloading_")
                    && !name.contains("omp_outlined")
                    && h.contains(" internal ") == internal
            })
            .map(|(h, _)| (ir::function_name(&h).to_string(), ir::param_types(&h)))
            .collect()
    };
    let device_kernels = kernels(&device, false);
    let host_fallbacks = kernels(&host, true);
    assert_eq!(device_kernels.len(), 2, "two target regions");
    for (name, params) in &device_kernels {
        let (_, fallback) = host_fallbacks
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no host fallback for {name}"));
        println!("clang {major} {name}: device {params:?}, host fallback {fallback:?}");
        if version >= KERNEL_ARGS_V3 {
            assert_eq!(params[0], "ptr", "v3 kernels take dyn_ptr first");
            assert_eq!(&params[1..], &fallback[..]);
        } else {
            assert_eq!(params, fallback, "pre-v3 kernels take the mapped args only");
        }
    }
}

fn linked_library(major: u32) {
    // The tools the driver runs for the offload link: clang 22 packs the
    // device image with llvm-offload-binary (package llvm-22), 15..=21 with
    // clang-offload-packager (clang-tools-N).
    let tools: &[&str] = if major >= 22 {
        &["llvm-offload-binary", "clang-linker-wrapper"]
    } else if major >= 15 {
        &["clang-offload-packager", "clang-linker-wrapper"]
    } else {
        &["clang-offload-wrapper", "clang-offload-bundler"]
    };
    let Some(clang) = crate::common::clang_with_tools(major, tools) else {
        return;
    };
    let dir = crate::common::tempdir();
    let lib = Elf::read(&clang.link_fixture(dir.path()));
    let flavour = entry_flavour(&clang);
    let entry = &flavour.layout;
    let (sec_begin, sec_size) = lib
        .section(flavour.section)
        .unwrap_or_else(|| panic!("no {} section", flavour.section));
    let sec_end = sec_begin + sec_size;

    // The descriptor handed to __tgt_register_lib.
    let bin_desc = rust_layout!(BinDesc {
        num_device_images,
        device_images,
        host_entries_begin,
        host_entries_end
    });
    let (desc, desc_size) = lib
        .symbol(".omp_offloading.descriptor")
        .expect("registration descriptor");
    assert_eq!(desc_size, bin_desc.size as u64, "sizeof(__tgt_bin_desc)");
    let num_images = lib.u32(desc + bin_desc.offset("num_device_images"));
    assert_eq!(num_images, 1, "one x86_64 image");
    let (images, images_size) = lib.symbol(".omp_offloading.device_images").unwrap();
    assert_eq!(lib.pointer(desc + bin_desc.offset("device_images")), images);
    assert_eq!(
        lib.pointer(desc + bin_desc.offset("host_entries_begin")),
        sec_begin
    );
    assert_eq!(
        lib.pointer(desc + bin_desc.offset("host_entries_end")),
        sec_end
    );

    // The device image table.
    let device_image = rust_layout!(DeviceImage {
        image_start,
        image_end,
        entries_begin,
        entries_end
    });
    assert_eq!(
        images_size, device_image.size as u64,
        "sizeof(__tgt_device_image)"
    );
    let start = lib.pointer(images + device_image.offset("image_start"));
    let end = lib.pointer(images + device_image.offset("image_end"));
    let (blob, blob_size) = lib.symbol(".omp_offloading.device_image").unwrap();
    assert!(blob <= start && start < end && end == blob + blob_size);
    let image = lib.bytes(start, end - start);
    assert_eq!(&image[..4], b"\x7fELF", "ImageStart points at the ELF");
    let device_elf = object::File::parse(&*image).expect("the image parses as ELF");
    assert_eq!(
        device_elf.kind(),
        object::ObjectKind::Dynamic,
        "a shared object"
    );
    println!(
        "clang {major}: image = {} B ELF at +{} in its blob of {blob_size} B",
        end - start,
        start - blob
    );
    assert_eq!(
        lib.pointer(images + device_image.offset("entries_begin")),
        sec_begin
    );
    assert_eq!(
        lib.pointer(images + device_image.offset("entries_end")),
        sec_end
    );

    // The host entries.
    assert_eq!(
        sec_size % entry.size as u64,
        0,
        "section holds whole entries"
    );
    let count = sec_size / entry.size as u64;
    println!(
        "clang {major}: {} holds {count} entries of {} B",
        flavour.section, entry.size
    );
    assert_eq!(count, 4);
    let field =
        |name_v1: &str, name_v2: &str| entry.offset(if flavour.v2 { name_v2 } else { name_v1 });
    let mut kernels = 0;
    let mut host_entries: Vec<(String, i32)> = Vec::new();
    for i in 0..count {
        let e = sec_begin + i * entry.size as u64;
        let addr = lib.pointer(e + field("addr", "address"));
        let name = lib.c_str(lib.pointer(e + field("name", "symbol_name")));
        let size = lib.u64(e + field("size", "size"));
        let flags = lib.u32(e + field("flags", "flags")) as i32;
        println!("  entry {i}: {name} addr={addr:#x} size={size} flags={flags}");
        host_entries.push((name.clone(), flags));
        if flavour.v2 {
            assert_eq!(lib.u64(e + entry.offset("reserved")), 0);
            assert_eq!(lib.u16(e + entry.offset("version")), 1);
            assert_eq!(lib.u16(e + entry.offset("kind")), 1, "OpenMP");
            assert_eq!(lib.u64(e + entry.offset("data")), 0);
            assert_eq!(lib.pointer(e + entry.offset("aux_addr")), 0);
        } else {
            assert_eq!(lib.u32(e + entry.offset("reserved")), 0);
        }
        let symbol = |s: &str| lib.symbol(s).unwrap_or_else(|| panic!("no symbol {s}")).0;
        match name.as_str() {
            "fixture_global" => {
                assert_eq!((addr, size, flags), (symbol(&name), 16, 0));
            }
            "fixture_linked_decl_tgt_ref_ptr" => {
                assert_eq!(
                    (addr, size, flags),
                    (symbol(&name), 8, declare_target::LINK)
                );
            }
            n if n.starts_with("__omp_offloading_")
                && (n.contains("_fixture_teams_l") || n.contains("_fixture_deferred_l")) =>
            {
                kernels += 1;
                let region_id = symbol(&format!(".{n}.region_id"));
                assert_eq!((addr, size, flags), (region_id, 0, 0));
            }
            other => panic!("unexpected entry {other}"),
        }
    }
    assert_eq!(kernels, 2);

    // The device image keeps its own entries (same layout, same section
    // name) for every host entry except `declare target link` ones: the
    // device defines the link variable's reference pointer but emits no
    // entry for it. Entries must be matched by name, never by index.
    let device_path = dir.path().join("device-image.so");
    std::fs::write(&device_path, &image).unwrap();
    let device = Elf::read(&device_path);
    let (dev_begin, dev_size) = device
        .section(flavour.section)
        .unwrap_or_else(|| panic!("device image has no {}", flavour.section));
    assert_eq!(dev_size % entry.size as u64, 0);
    let device_names: Vec<String> = (0..dev_size / entry.size as u64)
        .map(|i| {
            let e = dev_begin + i * entry.size as u64;
            device.c_str(device.pointer(e + field("name", "symbol_name")))
        })
        .collect();
    println!("clang {major}: device image entries {device_names:?}");
    let expected: Vec<String> = host_entries
        .iter()
        .filter(|(_, flags)| flags & declare_target::LINK == 0)
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(device_names, expected);
    assert!(
        device.symbol("fixture_linked_decl_tgt_ref_ptr").is_some(),
        "the device defines the link reference pointer"
    );
}

macro_rules! per_clang {
    ($($module:ident => $major:expr),* $(,)?) => {$(
        mod $module {
            #[test]
            fn offload_entry() {
                super::offload_entry($major)
            }
            #[test]
            fn kernel_args() {
                super::kernel_args_block($major)
            }
            #[test]
            fn kernel_signature() {
                super::kernel_signature($major)
            }
            #[test]
            fn linked_library() {
                super::linked_library($major)
            }
        }
    )*};
}

per_clang!(clang14 => 14, clang16 => 16, clang19 => 19, clang22 => 22);
