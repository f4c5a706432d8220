//! The built-in host plugin has a fixed number of instances, one per live
//! runtime. A test binary of its own: it holds every instance, which would
//! starve tests running beside it.
use omptarget::{Config, Error, Runtime, SkipReason};

#[test]
fn when_every_instance_is_taken_new_says_so_and_a_shutdown_frees_one() {
    let mut live = Vec::new();
    let err = loop {
        match Runtime::new(Config::default()) {
            Ok(runtime) => live.push(runtime),
            Err(err) => break err,
        }
        assert!(live.len() <= 64, "no limit reached");
    };
    assert_eq!(live.len(), omptarget::BUILTIN_HOST_INSTANCES);
    let Error::NoPluginLoaded { tried } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        tried[0].reason,
        SkipReason::AllInstancesInUse(omptarget::BUILTIN_HOST_INSTANCES)
    );
    assert!(
        err.to_string().contains("used by other live runtimes"),
        "{err}"
    );
    // Each runtime has its own devices and state.
    for runtime in &live {
        assert_eq!(runtime.device_count(), 4);
    }
    let first = live.remove(0);
    assert!(first.shutdown().is_clean());
    let again = Runtime::new(Config::default()).expect("the freed instance is reused");
    assert_eq!(again.device_count(), 4);
    live.push(again);
    for runtime in live {
        assert!(runtime.shutdown().is_clean());
    }
}
