//! Each server is offered only the images its devices can run: the
//! program's runtime asks each server once per image (`CanRun`, its
//! plugin's `is_valid_binary` and `is_device_compatible` per device), and
//! registers the image on the remote devices that can run it, as LLVM 20+
//! registers images on local devices.
use crate::job;
use crate::lifecycle::{build_source, describe, lib_path};
use omptarget_test_support::exec::Exit;
use omptarget_test_support::{paths, TestPlugin};
use std::path::Path;
use std::process::Command;

/// A job of two servers of different plugins, its devices all remote:
/// the first server serves the built-in host device; the second, the test
/// plugin, whose one device says it can run no image (as a GPU server
/// would of an x86-64 image).
fn job(program: &Path, device: &str, plugin: &TestPlugin) -> Command {
    job::Launch::new(job::Family::OpenMpi)
        .env("LD_LIBRARY_PATH", &lib_path())
        .env(
            "OMPTARGET_PLUGINS",
            &job::mpi_plugin().display().to_string(),
        )
        .context(1, program, &[device.to_owned()])
        .then()
        .env("LD_LIBRARY_PATH", &lib_path())
        .env("OMPTARGET_HOST_DEVICES", "1")
        .context(1, &job::server(), &[])
        .then()
        .env("LD_LIBRARY_PATH", &lib_path())
        .context(
            1,
            &job::server(),
            &["--plugin".to_owned(), plugin.path.display().to_string()],
        )
        .command()
}

/// The program's region on the first remote device runs there; on the
/// second it is a fatal error naming the device (no image was registered
/// there), and that server is asked about the image but never given it.
#[test]
fn a_server_gets_only_the_images_its_devices_can_run() {
    let source = paths::workspace_root().join("ffi/program/shim/tests/c/device_images.c");
    let program = build_source(&source, "device_images", false, &[]);

    let plugin = TestPlugin::isolated("devices=1\nincompatible_device=0\n");
    let out = job::run(job(&program, "0", &plugin));
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    let lines: Vec<&str> = out.stdout.lines().collect();
    for fact in ["devices=2", "ran_on_device=1", "value=7"] {
        assert!(lines.contains(&fact), "{fact} missing:\n{}", describe(&out));
    }
    let log = plugin.log();
    assert!(
        log.lines.iter().any(|l| l == "is_device_compatible 0"),
        "{log}"
    );
    assert!(
        !log.lines.iter().any(|l| l.starts_with("load_binary")),
        "{log}"
    );

    let plugin = TestPlugin::isolated("devices=1\nincompatible_device=0\n");
    let out = job::run(job(&program, "1", &plugin));
    assert_ne!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(
        out.stderr
            .contains("device 1 has no image of this program (none of its images can run there)"),
        "{}",
        describe(&out)
    );
    let log = plugin.log();
    assert!(
        !log.lines.iter().any(|l| l.starts_with("load_binary")),
        "{log}"
    );
}

/// A one-way copy that failed on its server is reported at the program's
/// next request there that does work, not taken as the answer to a
/// `CanRun` question (registering a library loaded with `dlopen` asks
/// one) and lost: the plugin reads a failed `CanRun` as "cannot tell",
/// warns and offers the image. The server's plugin fails every copy to a
/// device (`panic_in=data_submit`), so the program's first region there,
/// after the library's registration, fails with the copy's error.
#[test]
fn a_failed_one_way_copy_is_not_taken_for_the_answer_to_can_run() {
    let dir = paths::workspace_root().join("ffi/plugin/mpi/tests/c");
    let program = build_source(
        &dir.join("deferred_copy_error.c"),
        "deferred_copy_error",
        false,
        &[],
    );
    let library = build_source(
        &dir.join("offload_lib.c"),
        "liboffload_lib.so",
        false,
        &["-shared", "-fPIC"],
    );
    let plugin = TestPlugin::isolated("devices=1\npanic_in=data_submit\n");
    let cmd = job::Launch::new(job::Family::OpenMpi)
        .env("LD_LIBRARY_PATH", &lib_path())
        .env(
            "OMPTARGET_PLUGINS",
            &job::mpi_plugin().display().to_string(),
        )
        .context(1, &program, &[library.display().to_string()])
        .then()
        .env("LD_LIBRARY_PATH", &lib_path())
        .context(
            1,
            &job::server(),
            &["--plugin".to_owned(), plugin.path.display().to_string()],
        )
        .command();
    let out = job::run(cmd);
    assert_ne!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert!(!out.stdout.contains("y=1"), "{}", describe(&out));
    assert!(
        out.stderr.contains("an earlier copy to device 0 failed"),
        "{}",
        describe(&out)
    );
    assert!(
        !out.stderr.contains("offering it the image"),
        "{}",
        describe(&out)
    );
}
