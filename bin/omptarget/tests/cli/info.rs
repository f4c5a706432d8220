//! `omptarget info`: the plugins tried and the devices found.

use super::*;

#[test]
fn info_lists_every_plugin_tried_and_every_device() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = format!(
        "{}:/nonexistent/libomptarget.rtl.none.so",
        staged_host_plugin().display()
    );
    let env = [
        ("OMPTARGET_PLUGINS", plugins.as_str()),
        ("OMPTARGET_HOST_DEVICES", "2"),
    ];
    let out = omptarget(dir.path(), &["info", "--json"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugins = info["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 2, "{info}");
    assert_eq!(plugins[0]["name"], "libomptarget.rtl.x86_64.so");
    assert_eq!(plugins[0]["loaded"], true);
    assert_eq!(plugins[0]["devices"], 2);
    assert_eq!(plugins[1]["loaded"], false);
    assert!(
        plugins[1]["why"]
            .as_str()
            .unwrap()
            .starts_with("cannot open"),
        "{info}"
    );
    let devices = info["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    for (i, d) in devices.iter().enumerate() {
        assert_eq!(d["id"], i);
        assert_eq!(d["initialised"], true, "{d}");
        assert_eq!(d["plugin_device"], i);
        assert_eq!(d["memory_manager_threshold"], 8192);
    }
    assert_eq!(devices[0]["direct_copy_to"], serde_json::json!([1]));

    let out = omptarget(dir.path(), &["info"], &env);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("plugins (2 tried):\n  loaded   "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  skipped  /nonexistent/libomptarget.rtl.none.so: cannot open"),
        "{stdout}"
    );
    // The device's name follows in parentheses where the plugin knows it.
    assert!(
        stdout.contains("devices (2):\n  device 0: libomptarget.rtl.x86_64.so device 0")
            && stdout.contains("device 0")
            && stdout
                .lines()
                .any(|l| l.starts_with("  device 0: ") && l.contains(", ready;")),
        "{stdout}"
    );
}

#[test]
fn info_without_a_variable_tries_the_plugins_next_to_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    staged_host_plugin();
    let out = omptarget(dir.path(), &["info", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tried = info["plugins_tried"].as_array().unwrap();
    assert!(
        tried.iter().any(|p| p
            .as_str()
            .unwrap()
            .ends_with("/omptarget/lib/libomptarget.rtl.x86_64.so")),
        "{info}"
    );
    assert_eq!(info["devices"].as_array().unwrap().len(), 4, "{info}");
}
