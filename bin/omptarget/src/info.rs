//! `omptarget info`: the plugins a program would load and their devices.
//!
//! The plugins tried are those of `OMPTARGET_PLUGINS` if it is set, else
//! every `libomptarget.rtl.*.so` in the runtime's library folder (the
//! folder `libomptarget.so` loads its plugins from). Each device is
//! initialised, so a device that cannot start says why.
use crate::libdir;
use anyhow::{Context, Result};
use omptarget::{Config, Runtime};
use serde_json::{json, Value};

/// Print the information, as text or as JSON.
pub fn info(as_json: bool) -> Result<()> {
    let value = gather()?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", text(&value));
    }
    Ok(())
}

/// Everything `info` shows, as JSON.
fn gather() -> Result<Value> {
    let lib_dir = libdir::find()?;
    let mut config = Config::try_from_env().context("reading the environment")?;
    config.builtin_host = false;
    config.require_a_plugin = false;
    // Recording a profile or origins is for programs, not for this look.
    config.profile = None;
    if config.plugins().is_none() {
        // SAFETY: the plugin libraries of this installation (its library
        // directory), the ones a program of it loads by default.
        config = unsafe { config.with_plugins(libdir::plugins_in(&lib_dir)?) };
    }
    let tried = config.plugins().unwrap_or_default().to_vec();
    let runtime = Runtime::new(config).context("building a runtime")?;
    let mut plugins = Vec::new();
    for info in runtime.plugins() {
        plugins.push(json!({
            "path": info.path.display().to_string(),
            "name": info.name,
            "loaded": true,
            "devices": info.device_count,
            "first_device": info.first_device,
            "optional_entries": info.optional_entries,
        }));
    }
    for skipped in runtime.skipped_plugins() {
        plugins.push(json!({
            "path": skipped.path.display().to_string(),
            "name": skipped.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "loaded": false,
            "why": skipped.reason.to_string(),
            "undone": skipped.undone.iter().map(|(step, outcome)| format!("{step}: {outcome}")).collect::<Vec<_>>(),
        }));
    }
    let devices: Vec<&omptarget::Device> = runtime.devices().collect();
    let mut device_values = Vec::new();
    for device in &devices {
        let init = device.ensure_initialized();
        let peers: Vec<usize> = devices
            .iter()
            .filter(|other| other.id() != device.id() && device.can_exchange_with(other))
            .map(|other| other.id())
            .collect();
        // Where the device is: a remote device's name gives its rank and
        // host ("rank 1 on node7, device 0 of ...").
        let name = device.properties().ok().and_then(|p| p.name);
        device_values.push(json!({
            "id": device.id(),
            "name": name,
            "plugin": device.plugin_name(),
            "plugin_device": device.local_id(),
            "initialised": init.is_ok(),
            "init_error": init.err().map(|e| e.to_string()),
            "memory_manager_threshold": device.memory_stats().threshold,
            "direct_copy_to": peers,
        }));
    }
    drop(devices);
    let report = runtime.shutdown();
    Ok(json!({
        "runtime": lib_dir.join(libdir::RUNTIME).display().to_string(),
        "library_dir": lib_dir.display().to_string(),
        "plugins_tried": tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "plugins": plugins,
        "devices": device_values,
        "shutdown": report.summary(),
    }))
}

/// The text form of [`gather`]'s value.
fn text(v: &Value) -> String {
    let mut out = format!(
        "runtime: {}\nplugins ({} tried):\n",
        v["runtime"].as_str().unwrap_or_default(),
        v["plugins_tried"].as_array().map_or(0, Vec::len)
    );
    for p in v["plugins"].as_array().into_iter().flatten() {
        let path = p["path"].as_str().unwrap_or_default();
        if p["loaded"] == true {
            out += &format!(
                "  loaded   {path}: {} devices from device {}; optional entries: {}\n",
                p["devices"],
                p["first_device"],
                join(&p["optional_entries"])
            );
        } else {
            out += &format!(
                "  skipped  {path}: {}\n",
                p["why"].as_str().unwrap_or_default()
            );
        }
    }
    let devices = v["devices"].as_array().cloned().unwrap_or_default();
    out += &format!("devices ({}):\n", devices.len());
    for d in &devices {
        let state = match d["init_error"].as_str() {
            None => "ready".to_owned(),
            Some(err) => format!("cannot initialise: {err}"),
        };
        let peers = join(&d["direct_copy_to"]);
        let name = match d["name"].as_str() {
            Some(name) => format!(" ({name})"),
            None => String::new(),
        };
        out += &format!(
            "  device {}: {} device {}{name}, {state}; memory manager caches blocks up to {} bytes; direct copies to: {}\n",
            d["id"],
            d["plugin"].as_str().unwrap_or_default(),
            d["plugin_device"],
            d["memory_manager_threshold"],
            if peers.is_empty() { "none".into() } else { peers }
        );
    }
    out
}

fn join(list: &Value) -> String {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|v| match v.as_str() {
            Some(s) => s.to_owned(),
            None => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
