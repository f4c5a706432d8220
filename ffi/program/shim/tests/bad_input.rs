//! Bad input through the C ABI never crashes the process: each call comes
//! back with LLVM 14's error value and message, nothing bad reaches the
//! plugin, and the runtime keeps working. What LLVM 14 makes fatal ends
//! the process with LLVM's own messages and abort().

use omptarget_test_support::{clang::clang, clang::OFFLOAD, Run, Scratch, TestPlugin};

/// What stderr must hold, line for line, in the order of the calls, after
/// the lines of [`refused_frees`].
const EXPECTED_STDERR: &[&str] = &[
    // omp_target_memcpy: null dst, null src, bad dst device, bad src device
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    "Libomptarget error: omp_target_memcpy returns OFFLOAD_FAIL",
    "Libomptarget error: omp_target_memcpy returns OFFLOAD_FAIL",
    // a length that runs past the end of the address space, to and from
    // the device (LLVM 14 hands it to the plugin, which crashes), then
    // offsets that wrap around (LLVM 14 copies before the block)
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy with invalid arguments",
    // omp_target_memcpy_rect: 0 dims, negative dims, null volume, bad device
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: omp_target_memcpy returns OFFLOAD_FAIL",
    // omp_target_memcpy_rect of blocks that do not fit in their arrays:
    // dst rows, dst columns, src rows, 2^22 rows (LLVM 14 copies outside
    // the arrays and typically crashes; a deliberate difference)
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    "Libomptarget error: Call to omp_target_memcpy_rect with invalid arguments",
    // associate null, associate on a bad device, disassociate unknown
    "Libomptarget error: Call to omp_target_associate_ptr with invalid arguments",
    "Libomptarget error: omp_target_associate_ptr returns OFFLOAD_FAIL",
    "Libomptarget error: Association not found",
    // __tgt_target_data_* with arguments but null arrays (LLVM 14 crashes)
    "Libomptarget error: __tgt_target_data_begin: null argument array with 3 arguments",
    "Libomptarget error: __tgt_target_data_end: null argument array with 3 arguments",
    "Libomptarget error: __tgt_target_data_update: null argument array with 2 arguments",
    // null descriptors
    "Libomptarget error: __tgt_unregister_lib called with a null descriptor",
    "Libomptarget error: __tgt_register_lib called with a null descriptor",
];

/// The `omp_target_free` calls the device refuses, in call order: the
/// stack array and `0x10` on device 0, the block on device 1 (it was
/// allocated on 0), then the block freed twice on 0 (our lines: LLVM 14
/// hands these to the plugin's free). Bad device numbers and null stay
/// silent, as in LLVM.
fn refused_frees(out: &omptarget_test_support::Outcome) -> Vec<String> {
    let address = |key: &str| {
        let text = out.value(key);
        let hex = text.strip_prefix("0x").unwrap_or(text);
        usize::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("{key}={text}\n{out}"))
    };
    let (stack, block) = (address("stack_array_at"), address("block_at"));
    [(stack, 0), (0x10, 0), (block, 1), (block, 0)]
        .iter()
        .map(|(ptr, device)| {
            format!(
                "Libomptarget error: omp_target_free: device {device} did not free {ptr:#018x} \
                 (not allocated there, or already freed)"
            )
        })
        .collect()
}

#[test]
fn bad_calls_return_errors_and_the_runtime_keeps_working() {
    let scratch = Scratch::new("bad-input");
    let program = scratch.join("bad_input");
    clang(&["bad_input.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=2"]);
    let out = Run::new(&scratch, &program).plugin(&plugin).run();
    out.assert_success();

    for (key, want) in [
        ("first_region", "42"),
        ("devices", "2"),
        ("block", "allocated"),
        ("block_survives_bad_frees", "yes"),
        ("memcpy_null_dst", "-1"),
        ("memcpy_null_src", "-1"),
        ("memcpy_bad_dst_device", "-1"),
        ("memcpy_negative_src_device", "-1"),
        ("memcpy_huge_to_device", "-1"),
        ("memcpy_huge_from_device", "-1"),
        ("memcpy_wrapping_dst_offset", "-1"),
        ("memcpy_wrapping_src_offset", "-1"),
        ("memcpy_zero_length", "0"),
        ("rect_query", "2147483647"),
        ("rect_zero_dims", "-1"),
        ("rect_negative_dims", "-1"),
        ("rect_null_volume", "-1"),
        ("rect_bad_device", "-1"),
        ("rect_dst_rows_past_the_array", "-1"),
        ("rect_dst_cols_past_the_array", "-1"),
        ("rect_src_rows_past_the_array", "-1"),
        ("rect_volume_far_past_the_array", "-1"),
        ("rect_past_the_array_copied_nothing", "yes"),
        ("alloc_zero", "null"),
        ("alloc_huge", "null"),
        ("alloc_negative_device", "null"),
        ("alloc_bad_device", "null"),
        ("present_bad_device", "0"),
        ("present_null", "0"),
        ("associate_null", "-1"),
        ("associate_bad_device", "-1"),
        ("disassociate_unknown", "-1"),
        ("data_null_arrays", "returned"),
        ("registration_bad_descriptors", "returned"),
        ("last_region_0", "100"),
        ("last_region_1", "200"),
    ] {
        assert_eq!(out.value(key), want, "{key}\n{out}");
    }
    let mut expected = refused_frees(&out);
    expected.extend(EXPECTED_STDERR.iter().map(|l| l.to_string()));
    assert_eq!(out.stderr.lines().collect::<Vec<_>>(), expected, "{out}");

    let log = plugin.log();
    // No garbage, wrong-device or second free reached the plugin, and the
    // teardown returned every block.
    log.assert_every_alloc_freed_once();
    // The unknown descriptor's unregister did not shut the runtime down
    // (one runtime for the whole run).
    assert_eq!(log.count("init_plugin"), 1, "{log}");
    assert_eq!(log.count("deinit_plugin"), 1, "{log}");
    assert_eq!(log.lines.last().map(String::as_str), Some("fini"), "{log}");
}

/// (case, the `Libomptarget error` line that names the problem)
const FATAL_CASES: &[(&str, &str)] = &[
    (
        "negative_map_size",
        "Libomptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).",
    ),
    ("bad_device_data", "Libomptarget error: Device 77 is not ready."),
    ("bad_device_region", "Libomptarget error: Device 77 is not ready."),
];

#[test]
fn what_llvm14_makes_fatal_aborts_with_llvms_messages() {
    let scratch = Scratch::new("bad-input-fatal");
    let program = scratch.join("bad_input_fatal");
    clang(&["bad_input_fatal.c"], &program, OFFLOAD, &[]);
    for (case, first_line) in FATAL_CASES {
        let plugin = TestPlugin::new(&scratch, case, &["devices=1"]);
        let out = Run::new(&scratch, &program).plugin(&plugin).arg(case).run();
        out.assert_signal(libc::SIGABRT);
        assert_eq!(out.value("first_region"), "2", "{case}\n{out}");
        assert!(!out.stdout.contains("survived"), "{case}\n{out}");
        assert_eq!(
            out.stderr.lines().collect::<Vec<_>>(),
            [
                first_line,
                "Libomptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
                "Libomptarget error: Source location information not present. Compile with -g or -gline-tables-only.",
                "Libomptarget fatal error 1: failure of target construct while offloading is mandatory",
            ],
            "{case}\n{out}"
        );
    }
}

/// `target update to` of a `const` declare-target global (the device copy
/// lies in the image's read-only memory): LLVM 14's host plugin copies
/// into it and the process dies of SIGSEGV. The host backend refuses the
/// copy, so the update fails as a failed copy does: LLVM's messages and
/// its "offloading is mandatory" abort, after a region that read the
/// global normally. (Not in the differential suite: the reference
/// crashes, a deliberate difference.)
#[test]
fn an_update_to_a_const_global_fails_instead_of_faulting() {
    let scratch = Scratch::new("const-global-update");
    let program = scratch.join("const_global_update");
    clang(&["const_global_update.c"], &program, OFFLOAD, &[]);
    let plugin = TestPlugin::new(&scratch, "plugin", &["devices=1"]);
    let out = Run::new(&scratch, &program).plugin(&plugin).run();
    out.assert_signal(libc::SIGABRT);
    assert_eq!(out.value("before"), "7", "{out}");
    assert!(!out.stdout.contains("after_update"), "{out}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.len() == 5
            && lines[0].contains("error in __tgt_rtl_data_submit")
            && lines[0].contains("read-only memory of an image loaded on device 0"),
        "{out}"
    );
    assert_eq!(
        lines[1..],
        [
            "Libomptarget error: Copying data to device failed.",
            "Libomptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
            "Libomptarget error: Source location information not present. Compile with -g or -gline-tables-only.",
            "Libomptarget fatal error 1: failure of target construct while offloading is mandatory",
        ],
        "{out}"
    );
}
