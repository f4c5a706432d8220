//! The host plugin runs real clang-compiled kernels through its C entries.

use crate::helpers::*;
use std::ffi::{c_void, CStr};

#[test]
fn vector_add_on_a_device() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives and `table` is the
    // table just loaded on device 0; `da`, `db` and `dc` are `bytes`-byte
    // blocks of device 0 from `alloc`, so `submit`/`retrieve` of `N` f64s stay
    // in bounds, and `vadd(a, b, c, n)` with `n = N` only touches them; each
    // block is freed once.
    unsafe {
        assert_eq!((p.number_of_devices)(), 4, "LLVM 14's default device count");
        assert_eq!((p.is_valid_binary)(image.desc()), 1);
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(0, image.desc());
        let entries = table_entries(table);
        let names: Vec<&str> = entries
            .iter()
            .map(|e| CStr::from_ptr(e.name).to_str().unwrap())
            .collect();
        assert_eq!(names, ["vadd", "bump", "sum16", "write42", "counter"]);
        assert!(entries.iter().all(|e| !e.addr.is_null()));
        assert_eq!(entries[4].size, 8, "sizes are the host table's");

        const N: usize = 1000;
        let a: Vec<f64> = (0..N).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..N).map(|i| 0.5 * i as f64).collect();
        let bytes = N * 8;
        let (da, db, dc) = (
            alloc(&p, 0, bytes),
            alloc(&p, 0, bytes),
            alloc(&p, 0, bytes),
        );
        submit(&p, 0, da, &a);
        submit(&p, 0, db, &b);
        let vadd = entry_addr(table, "vadd");
        assert_eq!(
            run(&p, 0, vadd, &[da as usize, db as usize, dc as usize, N]),
            OFFLOAD_SUCCESS
        );
        let mut c = vec![0.0f64; N];
        retrieve(&p, 0, &mut c, dc);
        for (i, value) in c.iter().enumerate() {
            assert_eq!(*value, 1.5 * i as f64, "c[{i}]");
        }
        for d in [da, db, dc] {
            assert_eq!((p.data_delete)(0, d), OFFLOAD_SUCCESS);
        }
        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}

#[test]
fn sixteen_arguments_reach_the_kernel_in_order() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `sum16` comes from
    // the table loaded on device 1 and takes 16 pointer-sized arguments,
    // `args`/`argv` and `offsets` holding 16 each; `out` is an 8-byte block of
    // device 1 from `alloc`, which every copy of one i64 (`got` is 8 bytes)
    // stays within, and `queue` outlives the async calls it is passed to.
    unsafe {
        assert_eq!((p.init_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert_eq!((p.init_device)(1), OFFLOAD_SUCCESS);
        let table = (p.load_binary)(1, image.desc());
        let sum16 = entry_addr(table, "sum16");
        let out = alloc(&p, 1, 8);
        let mut args = vec![out as usize];
        let values: Vec<usize> = (1..=15).map(|i| 100 + i * 7).collect();
        args.extend(&values);
        let expected: i64 = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as i64 + 1) * v as i64)
            .sum();
        assert_eq!(run(&p, 1, sum16, &args), OFFLOAD_SUCCESS);
        let mut got = [0i64];
        retrieve(&p, 1, &mut got, out);
        assert_eq!(got[0], expected);

        // The team entry and the async entries run the same call.
        let mut argv: Vec<*mut c_void> = args.iter().map(|&a| a as *mut c_void).collect();
        let mut offsets = vec![0isize; argv.len()];
        submit(&p, 1, out, &[0i64]);
        let rc = (p.run_target_team_region)(
            1,
            sum16,
            argv.as_mut_ptr(),
            offsets.as_mut_ptr(),
            16,
            8,
            64,
            0,
        );
        assert_eq!(rc, OFFLOAD_SUCCESS);
        retrieve(&p, 1, &mut got, out);
        assert_eq!(got[0], expected);
        submit(&p, 1, out, &[0i64]);
        let mut queue = omptarget_abi::AsyncInfo {
            queue: std::ptr::null_mut(),
        };
        let rc = (p.run_target_team_region_async.unwrap())(
            1,
            sum16,
            argv.as_mut_ptr(),
            offsets.as_mut_ptr(),
            16,
            1,
            1,
            0,
            &mut queue,
        );
        assert_eq!(rc, OFFLOAD_SUCCESS);
        assert_eq!((p.synchronize.unwrap())(1, &mut queue), OFFLOAD_SUCCESS);
        let rc = (p.data_retrieve_async.unwrap())(1, got.as_mut_ptr().cast(), out, 8, &mut queue);
        assert_eq!(rc, OFFLOAD_SUCCESS);
        assert_eq!(got[0], expected);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
    }
}

#[test]
fn offsets_are_added_to_arguments() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `block` is a 64-byte
    // block of device 0, the copies move 64 bytes, and `write42` (one pointer
    // argument, one element in `args` and `offsets`) writes `block + 16`,
    // inside it (base - 24 + 40).
    unsafe {
        (p.init_device)(0);
        let table = (p.load_binary)(0, image.desc());
        let write42 = entry_addr(table, "write42");
        let block = alloc(&p, 0, 64);
        submit(&p, 0, block, &[0i64; 8]);
        // Base pointer 24 bytes below the slot, offset +40: slot 2.
        let mut args = [block.cast::<u8>().wrapping_sub(24).cast::<c_void>()];
        let mut offsets = [40isize];
        let rc = (p.run_target_region)(0, write42, args.as_mut_ptr(), offsets.as_mut_ptr(), 1);
        assert_eq!(rc, OFFLOAD_SUCCESS);
        let mut out = [0i64; 8];
        retrieve(&p, 0, &mut out, block);
        assert_eq!(out, [0, 0, 42, 0, 0, 0, 0, 0]);
    }
}

#[test]
fn each_device_gets_its_own_copy_of_globals() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; the tables were
    // loaded on devices 0 and 1 and stay live until unloaded, so each `counter`
    // is the 8-byte global `long counter` of that device's copy, and every copy
    // of one i64 or 8 bytes into or out of it stays in bounds (`counter_again`
    // belongs to `again`, read before that copy is unloaded); `bump` takes no
    // arguments, and `bump_again` is only passed to be refused.
    unsafe {
        let mut tables = Vec::new();
        for dev in 0..2 {
            assert_eq!((p.init_device)(dev), OFFLOAD_SUCCESS);
            tables.push((p.load_binary)(dev, image.desc()));
        }
        let counters: Vec<_> = tables.iter().map(|&t| entry_addr(t, "counter")).collect();
        assert_ne!(counters[0], counters[1]);
        submit(&p, 0, counters[0], &[10i64]);
        submit(&p, 1, counters[1], &[20i64]);
        for (dev, bumps) in [(0, 3), (1, 1)] {
            let bump = entry_addr(tables[dev as usize], "bump");
            for _ in 0..bumps {
                assert_eq!(run(&p, dev, bump, &[]), OFFLOAD_SUCCESS);
            }
        }
        let mut value = [0i64];
        retrieve(&p, 0, &mut value, counters[0]);
        assert_eq!(value[0], 13);
        retrieve(&p, 1, &mut value, counters[1]);
        assert_eq!(value[0], 21);

        // Device memory moves between devices with data_exchange.
        assert_eq!((p.is_data_exchangable.unwrap())(0, 1), 1);
        let rc = (p.data_exchange.unwrap())(0, counters[0], 1, counters[1], 8);
        assert_eq!(rc, OFFLOAD_SUCCESS);
        retrieve(&p, 1, &mut value, counters[1]);
        assert_eq!(value[0], 13);

        // Loading the same image again on a device gives an independent
        // copy; unloading drops the newest copy, the first stays usable.
        let again = (p.load_binary)(0, image.desc());
        let counter_again = entry_addr(again, "counter");
        let bump_again = entry_addr(again, "bump");
        assert_ne!(counter_again, counters[0]);
        retrieve(&p, 0, &mut value, counter_again);
        assert_eq!(value[0], 0, "a fresh copy starts from the image's data");
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);
        retrieve(&p, 0, &mut value, counters[0]);
        assert_eq!(value[0], 13);
        assert_eq!(
            run(&p, 0, entry_addr(tables[0], "bump"), &[]),
            OFFLOAD_SUCCESS
        );
        // The unloaded copy's kernels are refused (its table is gone too).
        assert_eq!(run(&p, 0, bump_again, &[]), OFFLOAD_FAIL);
    }
}

/// Kernels, copies and allocations run concurrently from several threads,
/// on separate devices and on one shared device.
#[test]
fn concurrent_threads_on_several_devices() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    let mut vadds = Vec::new();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives and `table_entries`'s
    // contract holds for the tables just loaded.
    unsafe {
        for dev in 0..4 {
            assert_eq!((p.init_device)(dev), OFFLOAD_SUCCESS);
            vadds.push(entry_addr((p.load_binary)(dev, image.desc()), "vadd") as usize);
        }
    }
    let p = &p;
    std::thread::scope(|scope| {
        // Threads 0-3 use their own device; threads 4-7 all use device 0.
        for thread in 0..8usize {
            let dev = if thread < 4 { thread } else { 0 };
            let vadd = vadds[dev];
            scope.spawn(move || {
                let vadd = vadd as *mut c_void;
                const N: usize = 512;
                for round in 0..50 {
                    let a: Vec<f64> = (0..N).map(|i| (i * thread + round) as f64).collect();
                    let bytes = N * 8;
                    let d = dev as i32;
                    let (da, dc) = (alloc(p, d, bytes), alloc(p, d, bytes));
                    // SAFETY: `da` and `dc` are this thread's own `bytes`-byte
                    // blocks of device `d` (allocated just above, freed only
                    // at the end of this block), so no other thread touches
                    // them; `vadd` is the `vadd(a, b, c, n)` entry of the
                    // table loaded on `d` (four pointer-sized arguments),
                    // and `n = N` keeps it within the blocks.
                    unsafe {
                        submit(p, d, da, &a);
                        let rc = run(p, d, vadd, &[da as usize, da as usize, dc as usize, N]);
                        assert_eq!(rc, OFFLOAD_SUCCESS);
                        let mut c = vec![0f64; N];
                        retrieve(p, d, &mut c, dc);
                        assert!(c.iter().zip(&a).all(|(c, a)| *c == 2.0 * a));
                        assert_eq!((p.data_delete)(d, da), OFFLOAD_SUCCESS);
                        assert_eq!((p.data_delete)(d, dc), OFFLOAD_SUCCESS);
                    }
                }
            });
        }
    });
}
