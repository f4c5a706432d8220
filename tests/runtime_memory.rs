//! The memory manager in front of a real plugin: reuse, threshold, and the
//! free-the-cache-and-retry path when the device runs out of memory
//! (`alloc_limit_bytes` of the test plugin).
mod raw_device;

use omptarget_test_support as support;

use omptarget::abi::AllocKind;
use omptarget::{Config, Error, Runtime};
use std::ptr::null_mut;

fn runtime_with(conf: &str, threshold: usize) -> (support::TestPlugin, Runtime) {
    let plugin = support::TestPlugin::isolated(conf);
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let config = unsafe { Config::default().with_plugins([&plugin.path]) }
        .with_memory_manager_threshold(threshold);
    let runtime = Runtime::new(config).unwrap();
    (plugin, runtime)
}

fn count(plugin: &support::TestPlugin, call: &str) -> usize {
    plugin.log_calls().iter().filter(|c| *c == call).count()
}

#[test]
fn small_blocks_are_reused_without_calling_the_plugin() {
    let (plugin, runtime) = runtime_with("devices=1\n", 8192);
    let device = runtime.device(0).unwrap();
    let a = raw_device::alloc(device, 100, null_mut(), AllocKind::Default).unwrap();
    raw_device::free(device, a).unwrap();
    let b = raw_device::alloc(device, 100, null_mut(), AllocKind::Default).unwrap();
    assert_eq!(a, b);
    let big = raw_device::alloc(device, 8193, null_mut(), AllocKind::Default).unwrap();
    raw_device::free(device, big).unwrap();
    // Host/shared kinds bypass the manager.
    let host = raw_device::alloc(device, 16, null_mut(), AllocKind::Host).unwrap();
    raw_device::free(device, host).unwrap();
    assert_eq!(count(&plugin, "data_alloc"), 3);
    assert_eq!(
        count(&plugin, "data_delete"),
        2,
        "the big and the host block"
    );
    raw_device::free(device, b).unwrap();
    let stats = device.memory_stats();
    assert_eq!(
        (stats.cached_blocks, stats.cached_bytes, stats.live_blocks),
        (1, 112, 0),
        "100 bytes were allocated as their size class, 112"
    );
    let report = runtime.shutdown();
    assert_eq!((report.blocks_freed, report.bytes_freed), (1, 112));
    assert_eq!(count(&plugin, "data_delete"), 3);
}

#[test]
fn threshold_decides_what_is_cached() {
    let (plugin, runtime) = runtime_with("devices=1\n", 64);
    let device = runtime.device(0).unwrap();
    for size in [64, 65] {
        let p = raw_device::alloc(device, size, null_mut(), AllocKind::Device).unwrap();
        raw_device::free(device, p).unwrap();
    }
    assert_eq!(
        count(&plugin, "data_delete"),
        1,
        "65 > threshold is freed at once"
    );
    assert_eq!(device.memory_stats().cached_bytes, 64);
    drop(runtime);
}

#[test]
fn threshold_zero_disables_the_manager() {
    let (plugin, runtime) = runtime_with("devices=1\n", 0);
    let device = runtime.device(0).unwrap();
    for _ in 0..3 {
        let p = raw_device::alloc(device, 32, null_mut(), AllocKind::Default).unwrap();
        raw_device::free(device, p).unwrap();
    }
    assert_eq!(count(&plugin, "data_alloc"), 3);
    assert_eq!(count(&plugin, "data_delete"), 3);
    let report = runtime.shutdown();
    assert_eq!(report.blocks_freed, 0);
    assert!(report.is_clean(), "{report}");
}

#[test]
fn out_of_memory_frees_the_cache_and_retries_once() {
    let (plugin, runtime) = runtime_with("devices=1\nalloc_limit_bytes=4096\n", 8192);
    let device = runtime.device(0).unwrap();
    let blocks: Vec<_> = (0..3)
        .map(|_| raw_device::alloc(device, 1024, null_mut(), AllocKind::Default).unwrap())
        .collect();
    for b in blocks {
        raw_device::free(device, b).unwrap();
    }
    assert_eq!(device.memory_stats().cached_bytes, 3072);
    // 3072 cached + 2048 > 4096 (sizes of whole classes): the first try fails, the cache is
    // returned, the retry succeeds.
    let p = raw_device::alloc(device, 2048, null_mut(), AllocKind::Default).unwrap();
    let lines = plugin.log_lines();
    let tail: Vec<&str> = lines[lines.len() - 5..]
        .iter()
        .map(|l| l.as_str())
        .collect();
    assert!(
        tail[0].starts_with("data_alloc 0 2048") && tail[0].ends_with("null"),
        "{tail:?}"
    );
    assert!(
        tail[1..4].iter().all(|l| l.starts_with("data_delete 0")),
        "{tail:?}"
    );
    assert!(
        tail[4].starts_with("data_alloc 0 2048") && !tail[4].ends_with("null"),
        "{tail:?}"
    );
    assert_eq!(device.memory_stats().cached_blocks, 0);

    // Too big even with an empty cache: a clean error, nothing lost.
    let err = raw_device::alloc(device, 3000, null_mut(), AllocKind::Default).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfMemory {
                device: 0,
                size: 3000,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(device.live_allocations(), (1, 2048));
    raw_device::free(device, p).unwrap();
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
}

/// Our plugins free a drain in one `data_delete_batch` call (the test
/// plugin logs it as one `data_delete` line per block, so the log reads as
/// before), and a batch that fails still reports every block not freed.
#[test]
fn drain_uses_the_batch_entry_and_reports_each_block_it_could_not_free() {
    let (plugin, runtime) = runtime_with("devices=1\n", 8192);
    assert!(
        runtime.plugins()[0]
            .optional_entries
            .contains(&"__tgt_rtl_data_delete_batch"),
        "{:?}",
        runtime.plugins()[0].optional_entries
    );
    let device = runtime.device(0).unwrap();
    let blocks: Vec<_> = (0..100)
        .map(|i| raw_device::alloc(device, 16 << (i % 9), null_mut(), AllocKind::Default).unwrap())
        .collect();
    for &b in &blocks {
        raw_device::free(device, b).unwrap();
    }
    assert_eq!(device.memory_stats().cached_blocks, 100);
    assert_eq!(count(&plugin, "data_delete"), 0);
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.blocks_freed, 100);
    let deleted: Vec<String> = plugin
        .log_lines()
        .into_iter()
        .filter(|l| l.starts_with("data_delete "))
        .collect();
    assert_eq!(deleted.len(), 100, "each block once: {deleted:?}");

    // Every `data_delete` panics, the batch's too: nothing is freed, each
    // cached block is listed, the step failed.
    let (_plugin, runtime) = runtime_with("devices=1\npanic_in=data_delete\n", 8192);
    let device = runtime.device(0).unwrap();
    let blocks: Vec<_> = (0..10)
        .map(|_| raw_device::alloc(device, 64, null_mut(), AllocKind::Default).unwrap())
        .collect();
    for &b in &blocks {
        raw_device::free(device, b).unwrap();
    }
    let report = runtime.shutdown();
    assert_eq!(report.blocks_freed, 0, "{report}");
    let drain = report
        .steps
        .iter()
        .find(|s| s.phase() == omptarget::Phase::DrainMemoryManagers)
        .unwrap();
    assert!(
        matches!(drain.outcome(), omptarget::StepOutcome::Failed(_)),
        "{report}"
    );
    for b in blocks {
        let what = format!("cached block {:#x} (64 bytes)", b.addr());
        assert!(
            report.not_freed.iter().any(|n| n.what == what),
            "{what} not listed: {report}"
        );
    }
    assert_eq!(report.not_freed.len(), 10, "{report}");
}
