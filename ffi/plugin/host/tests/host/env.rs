//! The host plugin's environment variables. The test's body runs in a
//! child process of this binary, alone, so that setting variables races
//! with no other thread (the other tests of the binary run beside it under
//! `cargo test`).

use crate::helpers::*;
use std::process::Command;

/// Set in the child that runs the body.
const CHILD: &str = "OMPTARGET_HOST_ENV_TEST_CHILD";

#[test]
fn environment_settings() {
    if std::env::var_os(CHILD).is_none() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "env::environment_settings",
                "--exact",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .expect("running the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the child failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        return;
    }
    environment_settings_alone();
}

/// The test's body: the only thread of its process that sets variables.
fn environment_settings_alone() {
    let images = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let image = kernels_image(work.path());

    // By default images are loaded from memfds: a temp dir that does not
    // exist does not matter, and no file is written anywhere.
    std::env::remove_var("OMPTARGET_HOST_IMAGE_DIR");
    let (_copy, p) = host_plugin();
    // After copying the plugin (which uses the temp dir); read at init.
    std::env::set_var("TMPDIR", images.path().join("no-such-tmpdir"));
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `bump` comes from
    // the table just loaded on `dev` and takes no arguments.
    unsafe {
        (p.init_plugin.unwrap())();
        for dev in 0..2 {
            (p.init_device)(dev);
            let table = (p.load_binary)(dev, image.desc());
            assert!(!table.is_null(), "load on device {dev} with TMPDIR missing");
            assert_eq!(
                run(&p, dev, entry_addr(table, "bump"), &[]),
                OFFLOAD_SUCCESS
            );
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(maps.contains("/memfd:omptarget-host-image"), "{maps}");
        assert!(image_files(images.path()).is_empty());
        (p.deinit_plugin.unwrap())();
    }
    std::env::remove_var("TMPDIR");

    // OMPTARGET_HOST_IMAGE_DIR forces files, written there.
    std::env::set_var("OMPTARGET_HOST_IMAGE_DIR", images.path());

    // OMPTARGET_HOST_DEVICES sets the count; a bad value falls back to 4.
    for (value, devices) in [("2", 2), ("0", 0), ("17", 17), ("lots", 4), ("-3", 4)] {
        std::env::set_var("OMPTARGET_HOST_DEVICES", value);
        let (_copy, p) = host_plugin();
        // SAFETY: number_of_devices takes no pointers; `p` keeps the
        // plugin library open, so the entry is mapped.
        let count = unsafe { (p.number_of_devices)() };
        assert_eq!(count, devices, "OMPTARGET_HOST_DEVICES={value}");
    }
    std::env::remove_var("OMPTARGET_HOST_DEVICES");

    // By default an image file is removed as soon as it is loaded.
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives; `bump` comes from
    // the table just loaded on device 0 and takes no arguments.
    unsafe {
        (p.init_plugin.unwrap())();
        (p.init_device)(0);
        let table = (p.load_binary)(0, image.desc());
        assert_eq!(run(&p, 0, entry_addr(table, "bump"), &[]), OFFLOAD_SUCCESS);
        assert!(image_files(images.path()).is_empty());
        // Loaded from a (removed) file in that directory.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let file_prefix = format!("{}/omptarget-host-image-", images.path().display());
        assert!(maps.contains(&file_prefix), "{maps}");
        (p.deinit_plugin.unwrap())();
    }

    // OMPTARGET_HOST_KEEP_IMAGE_FILES keeps them while loaded; unload,
    // deinit_device and deinit_plugin each remove theirs.
    std::env::set_var("OMPTARGET_HOST_KEEP_IMAGE_FILES", "1");
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` and `bad.desc()` are valid while `image` and `bad`
    // live.
    unsafe {
        (p.init_plugin.unwrap())();
        for dev in 0..3 {
            (p.init_device)(dev);
            assert!(!(p.load_binary)(dev, image.desc()).is_null());
        }
        assert!(!(p.load_binary)(0, image.desc()).is_null());
        assert_eq!(image_files(images.path()).len(), 4);
        assert_eq!((p.unload_binary.unwrap())(0, image.desc()), OFFLOAD_SUCCESS);
        assert_eq!(image_files(images.path()).len(), 3);
        assert_eq!((p.deinit_device.unwrap())(0), OFFLOAD_SUCCESS);
        assert_eq!(image_files(images.path()).len(), 2);
        assert_eq!((p.deinit_plugin.unwrap())(), OFFLOAD_SUCCESS);
        assert!(image_files(images.path()).is_empty());
        // A failed load leaves no file either.
        (p.init_plugin.unwrap())();
        (p.init_device)(0);
        let bad = ImageFixture::new(
            std::fs::read(work.path().join("kernels.so")).unwrap(),
            &[("missing_symbol", 0)],
        );
        assert!((p.load_binary)(0, bad.desc()).is_null());
        assert!(image_files(images.path()).is_empty());
    }
    std::env::remove_var("OMPTARGET_HOST_KEEP_IMAGE_FILES");

    // An unusable image directory makes loading fail with a clear error
    // (set explicitly, it is not bypassed through a memfd).
    std::env::set_var("OMPTARGET_HOST_IMAGE_DIR", images.path().join("missing"));
    let (_copy, p) = host_plugin();
    // SAFETY: the plugin library stays open while `p` lives, so its entries are
    // mapped; `image.desc()` is valid while `image` lives.
    unsafe {
        (p.init_device)(0);
        assert!((p.load_binary)(0, image.desc()).is_null());
    }
}
