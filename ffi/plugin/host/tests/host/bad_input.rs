//! Bad input gets a clear failure code and leaves the plugin usable.

use crate::helpers::*;
use omptarget_abi::DeviceImage;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn invalid_images_are_rejected_and_loading_them_fails_cleanly() {
    let (_copy, p) = host_plugin();
    let work = tempfile::tempdir().unwrap();
    let object = {
        // A relocatable object (ET_REL) is ELF x86_64 but not loadable.
        let src = work.path().join("k.c");
        std::fs::write(&src, "int f(void) { return 1; }").unwrap();
        clang(work.path(), &["-c", "k.c", "-o", "k.o"]);
        std::fs::read(work.path().join("k.o")).unwrap()
    };
    let mut truncated = std::fs::read(host_so()).unwrap();
    truncated.truncate(32);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "text",
            b"definitely not an ELF image, just some bytes".to_vec(),
        ),
        ("empty", Vec::new()),
        ("truncated header", truncated),
        ("relocatable object", object),
    ];
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; every descriptor passed is `image`'s, `missing`'s or one of
    // `broken`, which live across the block (the broken ones only point into
    // `good`'s buffers or are null, and the plugin must reject them without
    // reading past their bounds, which is what this test checks); `good` derefs
    // `image.desc()`, valid while `image` lives; `bump` is from the table just
    // loaded on device 0 and takes no arguments.
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        for (what, bytes) in cases {
            let image = ImageFixture::new(bytes, &[("f", 0)]);
            assert_eq!((p.is_valid_binary)(image.desc()), 0, "{what}");
            assert!((p.load_binary)(0, image.desc()).is_null(), "{what}");
        }
        // A valid ELF whose host table names a symbol the image lacks.
        let image = kernels_image(work.path());
        let missing = ImageFixture::new(
            std::fs::read(work.path().join("kernels.so")).unwrap(),
            &[("vadd", 0), ("no_such_kernel", 0)],
        );
        assert_eq!((p.is_valid_binary)(missing.desc()), 1);
        assert!((p.load_binary)(0, missing.desc()).is_null());
        // Null descriptor, null start, reversed bounds, misaligned table.
        assert_eq!((p.is_valid_binary)(null_mut()), 0);
        assert!((p.load_binary)(0, null_mut()).is_null());
        let good = &*image.desc();
        let broken = [
            DeviceImage {
                image_start: null_mut(),
                ..*good
            },
            DeviceImage {
                image_start: good.image_end,
                image_end: good.image_start,
                ..*good
            },
            DeviceImage {
                entries_begin: null_mut(),
                ..*good
            },
            DeviceImage {
                entries_end: good.entries_begin.cast::<u8>().add(3).cast(),
                ..*good
            },
            DeviceImage {
                entries_begin: good.entries_end,
                entries_end: good.entries_begin,
                ..*good
            },
        ];
        for (i, mut desc) in broken.into_iter().enumerate() {
            assert_eq!((p.is_valid_binary)(&mut desc), 0, "broken descriptor {i}");
            assert!(
                (p.load_binary)(0, &mut desc).is_null(),
                "broken descriptor {i}"
            );
        }
        // The plugin is still fine.
        let table = (p.load_binary)(0, image.desc());
        assert!(!table.is_null());
        let bump = entry_addr(table, "bump");
        assert_eq!(run(&p, 0, bump, &[]), OFFLOAD_SUCCESS);
    }
}

#[test]
fn bad_device_ids_fail_every_entry() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    let mut byte = 0u8;
    let host = (&mut byte as *mut u8).cast::<c_void>();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; every call passes a device id the plugin must refuse before
    // touching any pointer, and `host` points at `byte`, one live writable
    // byte, so even an accepted 1-byte copy stays in bounds; null argument
    // arrays go with a count of 0.
    unsafe {
        for dev in [-1, 4, 1000, i32::MIN, i32::MAX] {
            assert_eq!((p.init_device)(dev), OFFLOAD_FAIL, "init_device({dev})");
            assert!((p.load_binary)(dev, image.desc()).is_null());
            assert!((p.data_alloc)(dev, 8, null_mut(), 0).is_null());
            assert_eq!((p.data_submit)(dev, host, host, 1), OFFLOAD_FAIL);
            assert_eq!((p.data_retrieve)(dev, host, host, 1), OFFLOAD_FAIL);
            assert_eq!((p.data_delete)(dev, host), OFFLOAD_FAIL);
            assert_eq!(
                (p.run_target_region)(dev, host, null_mut(), null_mut(), 0),
                OFFLOAD_FAIL
            );
            assert_eq!(
                (p.run_target_team_region)(dev, host, null_mut(), null_mut(), 0, 1, 1, 0),
                OFFLOAD_FAIL
            );
            assert_eq!((p.deinit_device.unwrap())(dev), OFFLOAD_FAIL);
            assert_eq!((p.unload_binary.unwrap())(dev, image.desc()), OFFLOAD_FAIL);
            assert_eq!((p.synchronize.unwrap())(dev, null_mut()), OFFLOAD_FAIL);
            assert_eq!((p.is_data_exchangable.unwrap())(0, dev), 0);
            (p.print_device_info.unwrap())(dev);
        }
        // A device in range but not initialised.
        assert!((p.load_binary)(3, image.desc()).is_null());
        assert!((p.data_alloc)(3, 8, null_mut(), 0).is_null());
        assert_eq!((p.deinit_device.unwrap())(3), OFFLOAD_FAIL);
        // Data of the failed calls was not touched.
        assert_eq!(byte, 0);
    }
}

#[test]
fn null_pointers_negative_sizes_and_unknown_memory_fail_cleanly() {
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `block` is a 16-byte block of device 0 from `alloc` and `h`
    // points at `host`, 16 live bytes, so the copies that succeed stay in
    // bounds; the null, negative and unknown pointers are what the plugin must
    // refuse without dereferencing, and `submit`/`retrieve` copy 16 bytes into
    // and out of `block` before it is freed.
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        assert_eq!((p.init_device)(1), OFFLOAD_SUCCESS);
        let block = alloc(&p, 0, 16);
        let mut host = [7u8; 16];
        let h = host.as_mut_ptr().cast::<c_void>();
        // Sizes and kinds.
        assert!((p.data_alloc)(0, -1, null_mut(), 0).is_null());
        assert!(
            (p.data_alloc)(0, 8, null_mut(), 4).is_null(),
            "unknown kind"
        );
        assert!(
            (p.data_alloc)(0, 8, null_mut(), -1).is_null(),
            "unknown kind"
        );
        for kind in 0..4 {
            let q = (p.data_alloc)(0, 8, null_mut(), kind);
            assert!(!q.is_null(), "kind {kind}");
            assert_eq!((p.data_delete)(0, q), OFFLOAD_SUCCESS);
        }
        assert_eq!((p.data_submit)(0, block, h, -5), OFFLOAD_FAIL);
        assert_eq!((p.data_retrieve)(0, h, block, -5), OFFLOAD_FAIL);
        // Null pointers.
        assert_eq!((p.data_submit)(0, null_mut(), h, 16), OFFLOAD_FAIL);
        assert_eq!((p.data_submit)(0, block, null_mut(), 16), OFFLOAD_FAIL);
        assert_eq!((p.data_retrieve)(0, null_mut(), block, 16), OFFLOAD_FAIL);
        assert_eq!((p.data_retrieve)(0, h, null_mut(), 16), OFFLOAD_FAIL);
        assert_eq!((p.data_delete)(0, null_mut()), OFFLOAD_FAIL);
        // A zero-byte copy is a no-op, even with null pointers.
        assert_eq!(
            (p.data_submit)(0, null_mut(), null_mut(), 0),
            OFFLOAD_SUCCESS
        );
        // Memory of another device, or never allocated, is not freed.
        assert_eq!((p.data_delete)(1, block), OFFLOAD_FAIL);
        assert_eq!((p.data_delete)(0, h), OFFLOAD_FAIL);
        // The block is intact and still owned by device 0.
        submit(&p, 0, block, &host);
        let mut back = [0u8; 16];
        retrieve(&p, 0, &mut back, block);
        assert_eq!(back, host);
        assert_eq!((p.data_delete)(0, block), OFFLOAD_SUCCESS);
        assert_eq!(
            (p.data_delete)(0, block),
            OFFLOAD_FAIL,
            "double free is refused"
        );

        // Kernel launches.
        let table = (p.load_binary)(0, image.desc());
        let write42 = entry_addr(table, "write42");
        let mut offsets = [0isize];
        let mut args = [h];
        assert_eq!(
            (p.run_target_region)(0, null_mut(), args.as_mut_ptr(), offsets.as_mut_ptr(), 1),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (p.run_target_region)(0, write42, null_mut(), offsets.as_mut_ptr(), 1),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (p.run_target_region)(0, write42, args.as_mut_ptr(), null_mut(), 1),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (p.run_target_region)(0, write42, args.as_mut_ptr(), offsets.as_mut_ptr(), -1),
            OFFLOAD_FAIL
        );
        // An address that is not a kernel of this device (a global, a
        // host function, a kernel of a device where it is not loaded).
        let counter = entry_addr(table, "counter");
        assert_eq!(
            (p.run_target_region)(0, counter, null_mut(), null_mut(), 0),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (p.run_target_region)(0, h, null_mut(), null_mut(), 0),
            OFFLOAD_FAIL
        );
        assert_eq!(
            (p.run_target_region)(1, write42, args.as_mut_ptr(), offsets.as_mut_ptr(), 1),
            OFFLOAD_FAIL
        );
        assert_eq!(host, [7u8; 16], "no kernel ran");
        // Unloading an image that is not loaded there.
        assert_eq!((p.unload_binary.unwrap())(1, image.desc()), OFFLOAD_FAIL);
        assert_eq!((p.unload_binary.unwrap())(0, null_mut()), OFFLOAD_FAIL);
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_FAIL);
    }
}

#[test]
fn data_delete_batch_frees_what_it_can_and_refuses_the_rest() {
    let (_copy, p) = host_plugin();
    let batch = p
        .data_delete_batch
        .expect("the host plugin exports __tgt_rtl_data_delete_batch");
    let mut host = [0u8; 16];
    let h = host.as_mut_ptr().cast::<c_void>();
    // SAFETY: the plugin library stays open while `p` lives; every array
    // passed holds the count given (or is null, which the entry must
    // refuse without reading); the pointers in them are blocks of device 0,
    // `h` (host memory the plugin must refuse, not free) or null.
    unsafe {
        assert_eq!((p.init_device)(0), OFFLOAD_SUCCESS);
        assert_eq!((p.init_device)(1), OFFLOAD_SUCCESS);
        // Nothing to free: succeeds without reading the array.
        assert_eq!(batch(0, null_mut(), 0), OFFLOAD_SUCCESS);
        assert_eq!(batch(0, null_mut(), 3), OFFLOAD_FAIL, "null array");
        let (a, b, c) = (alloc(&p, 0, 16), alloc(&p, 0, 4096), alloc(&p, 0, 100));
        let mut slots = [a, b];
        assert_eq!(batch(0, slots.as_mut_ptr(), -1), OFFLOAD_FAIL, "n < 0");
        assert_eq!(batch(9, slots.as_mut_ptr(), 2), OFFLOAD_FAIL, "no device 9");
        assert_eq!(
            batch(2, slots.as_mut_ptr(), 2),
            OFFLOAD_FAIL,
            "not initialised"
        );
        assert_eq!(
            batch(1, slots.as_mut_ptr(), 2),
            OFFLOAD_FAIL,
            "device 1's? no"
        );
        assert_eq!(slots, [a, b], "a refused batch touches no slot");

        // Host memory, a null entry and a repeat are refused one by one;
        // the rest is freed and its slots nulled.
        let mut slots = [a, h, b, null_mut(), a, c];
        assert_eq!(batch(0, slots.as_mut_ptr(), 6), OFFLOAD_FAIL);
        assert_eq!(
            slots,
            [null_mut(), h, null_mut(), null_mut(), a, null_mut()]
        );
        for freed in [a, b, c] {
            assert_eq!((p.data_delete)(0, freed), OFFLOAD_FAIL, "freed once only");
        }

        // A clean batch: everything freed, success.
        let blocks: Vec<*mut c_void> = (0..1000).map(|i| alloc(&p, 0, 16 + i)).collect();
        let mut slots = blocks.clone();
        assert_eq!(batch(0, slots.as_mut_ptr(), 1000), OFFLOAD_SUCCESS);
        assert!(slots.iter().all(|s| s.is_null()));
        let mut again = blocks.clone();
        assert_eq!(batch(0, again.as_mut_ptr(), 1000), OFFLOAD_FAIL);
        assert_eq!(again, blocks, "a second batch frees nothing");
        // The device still works.
        let d = alloc(&p, 0, 32);
        assert_eq!((p.data_delete)(0, d), OFFLOAD_SUCCESS);
    }
}
