//! The destructors of device images, a step of the teardown: an image's
//! global constructors run when it is loaded, its destructors when the
//! teardown unloads it (step 3), before `deinit_device`, and the report
//! lists them per device and image; a partial teardown at exit or a dead
//! plugin runs none of them and says why. The image (`global_dtor.c`)
//! appends a line to the test plugin's call log from its constructor and
//! destructor, so their place among the plugin's calls is in one file.
//! One test per process: the image finds the log through an environment
//! variable, set here before any other thread runs.
use omptarget_test_support as support;

use omptarget::image::OwnedImage;
use omptarget::{Config, DtorsOutcome, Runtime};
use support::plugin::{first, last};

fn global_dtor_image() -> OwnedImage {
    let elf = std::fs::read(support::clang::build_kernel_image("global_dtor.c")).unwrap();
    OwnedImage::new(&elf, &["touch"]).unwrap()
}

#[test]
fn image_destructors_run_at_unload_before_deinit_device_and_are_reported() {
    let plugin = support::TestPlugin::isolated("devices=2\n");
    // Before any other thread of this process exists (one test here).
    std::env::set_var("OMPTARGET_TEST_IMAGE_LOG", &plugin.log_path);
    let image = global_dtor_image();
    // SAFETY: a plugin library of this project (or LLVM's) built for the tests.
    let runtime = Runtime::new(unsafe { Config::default().with_plugins([&plugin.path]) }).unwrap();
    let device = runtime.device(0).unwrap();
    // SAFETY: `image` outlives the runtime.
    unsafe { device.load_image(image.as_device_image()).unwrap() };
    let calls = plugin.log_calls();
    assert_eq!(
        calls.iter().filter(|c| *c == "image_ctor").count(),
        1,
        "the constructor ran once, at the load: {calls:?}"
    );
    assert!(
        first(&calls, "image_ctor") > first(&calls, "init_device"),
        "{calls:?}"
    );

    // A partial teardown at exit: the image stays loaded, its destructors
    // do not run, and the report says so.
    let partial = runtime.release_unused_at_exit("a kernel is running");
    println!("{partial}");
    assert_eq!(partial.image_dtors.len(), 1, "{partial}");
    let kept = &partial.image_dtors[0];
    assert_eq!(kept.device, 0);
    assert_eq!(kept.image, image.as_device_image() as usize);
    assert!(
        matches!(&kept.outcome, DtorsOutcome::NotRun(why) if why.contains("in use at exit: a kernel is running")),
        "{partial}"
    );
    assert!(
        partial
            .to_string()
            .contains("): destructors NOT run: in use at exit: a kernel is running"),
        "{partial}"
    );
    assert!(!plugin.log_calls().contains(&"image_dtor".to_owned()));

    // The full teardown runs them at the unload, before deinit_device.
    let report = runtime.shutdown();
    println!("{report}");
    let calls = plugin.log_calls();
    assert_eq!(
        calls.iter().filter(|c| *c == "image_dtor").count(),
        1,
        "the destructor ran once: {calls:?}"
    );
    let dtor = first(&calls, "image_dtor");
    assert!(last(&calls, "load_binary") < dtor, "{calls:?}");
    assert!(dtor < first(&calls, "deinit_device"), "{calls:?}");
    assert!(dtor < first(&calls, "fini"), "{calls:?}");
    assert_eq!(report.image_dtors.len(), 1, "{report}");
    let ran = &report.image_dtors[0];
    assert_eq!(ran.outcome, DtorsOutcome::RunByUnload, "{report}");
    assert!(ran.fini_array.is_some_and(|n| n >= 1), "{report}");
    assert_eq!(ran.dtor_entries, 0);
    assert!(report.is_clean(), "{report}");
    let text = report.to_string();
    assert!(
        text.contains("  image destructors (run by each image's unload, before deinit_device; or not run, and why):\n    device 0 (libomptarget.rtl.test.so): image 0x"),
        "{text}"
    );
    assert!(
        text.contains(".fini_array entries): destructors run by unload_binary\n"),
        "{text}"
    );
}
