//! Handles forgotten on purpose (`mem::forget`): the runtime reports them.
//! A test binary of its own, outside the valgrind run of the API tests
//! (`cargo xtask test`): a forgotten `Image` leaks the handle's own host
//! memory (its entry list), which valgrind rightly counts as lost.
use omptarget::{Config, Image, Runtime};
use omptarget_user_tests::kernel;

fn runtime() -> Runtime {
    Runtime::new(Config::default()).expect("the default runtime has the built-in host devices")
}

/// A forgotten `Image` (`mem::forget`) is unloaded by the teardown and
/// reported as the user's leak, like a forgotten buffer.
#[test]
fn a_forgotten_image_is_reported_as_a_leak() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let so = kernel("typed.c")?;
    // Dropped (and one unloaded explicitly): not leaks.
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    drop(unsafe { Image::load_file(device, &so, &["scale"]) }?);
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    assert!(unsafe { Image::load_file(device, &so, &["scale"]) }?.unload()?);
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    std::mem::forget(unsafe { Image::load_file(device, &so, &["scale", "counter"]) }?);
    let report = runtime.shutdown();
    assert!(!report.is_clean(), "{report}");
    assert_eq!(report.leaked_images.len(), 1, "{report}");
    assert_eq!(report.leaked_images[0].entries, ["scale", "counter"]);
    assert!(
        report
            .to_string()
            .contains("images whose Image handle was never dropped"),
        "{report}"
    );
    assert!(report.not_freed.is_empty(), "it was unloaded: {report}");
    Ok(())
}
