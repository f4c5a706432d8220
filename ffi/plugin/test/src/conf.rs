//! The `<library>.conf` file: parsing and defaults.

use std::path::{Path, PathBuf};

/// Default number of devices.
pub const DEFAULT_DEVICES: usize = 2;

/// The entries `panic_in` accepts.
pub const PANIC_ENTRIES: &[&str] = &[
    "init_plugin",
    "init_device",
    "is_device_compatible",
    "deinit_device",
    "load_binary",
    "unload_binary",
    "data_alloc",
    "data_delete",
    "data_submit",
    "data_retrieve",
    "run_target_region",
    "deinit_plugin",
];

/// The test plugin's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conf {
    pub devices: usize,
    /// Devices `number_of_devices` reports instead of `devices` (only
    /// `devices` are served, nothing is allocated for the rest).
    pub claimed_devices: Option<usize>,
    pub fail_init_device: Vec<usize>,
    pub fail_init_plugin: bool,
    /// `deinit_plugin` answers as a plugin with a kernel still running.
    pub deinit_in_use: bool,
    pub alloc_limit_bytes: Option<usize>,
    pub log: PathBuf,
    pub panic_in: Vec<String>,
    /// What `get_device_info` answers for `DeviceInfoKey::Location` (a
    /// device outside this process, as a remote one); none by default.
    pub location: Option<String>,
    /// The first this many questions for the location fail.
    pub fail_location: usize,
    /// Devices that `is_device_compatible` says cannot run any image.
    pub incompatible_device: Vec<usize>,
}

impl Conf {
    /// The defaults for the library at `library`.
    pub fn defaults(library: &Path) -> Self {
        Self {
            devices: DEFAULT_DEVICES,
            claimed_devices: None,
            fail_init_device: Vec::new(),
            fail_init_plugin: false,
            deinit_in_use: false,
            alloc_limit_bytes: None,
            log: with_suffix(library, ".log"),
            panic_in: Vec::new(),
            location: None,
            fail_location: 0,
            incompatible_device: Vec::new(),
        }
    }

    /// Read `<library>.conf`; a missing file gives the defaults.
    pub fn load(library: &Path) -> Result<Self, String> {
        let path = with_suffix(library, ".conf");
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, library).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::defaults(library)),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Parse conf text (see the crate docs for the format).
    pub fn parse(text: &str, library: &Path) -> Result<Self, String> {
        let mut conf = Self::defaults(library);
        for (number, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |e: String| format!("line {}: {e}", number + 1);
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| at(format!("`{line}` is not key=value")))?;
            match key {
                "devices" => conf.devices = number_value(key, value).map_err(at)?,
                "claimed_devices" => {
                    conf.claimed_devices = Some(number_value(key, value).map_err(at)?)
                }
                "fail_init_device" => conf
                    .fail_init_device
                    .push(number_value(key, value).map_err(at)?),
                "fail_init_plugin" => conf.fail_init_plugin = flag_value(key, value).map_err(at)?,
                "deinit_in_use" => conf.deinit_in_use = flag_value(key, value).map_err(at)?,
                "alloc_limit_bytes" => {
                    conf.alloc_limit_bytes = Some(number_value(key, value).map_err(at)?)
                }
                "log" if !value.is_empty() => conf.log = PathBuf::from(value),
                "location" if !value.is_empty() => conf.location = Some(value.into()),
                "fail_location" => conf.fail_location = number_value(key, value).map_err(at)?,
                "incompatible_device" => conf
                    .incompatible_device
                    .push(number_value(key, value).map_err(at)?),
                "panic_in" if PANIC_ENTRIES.contains(&value) => conf.panic_in.push(value.into()),
                "panic_in" => {
                    return Err(at(format!(
                        "panic_in: `{value}` is not one of {PANIC_ENTRIES:?}"
                    )))
                }
                _ => return Err(at(format!("unknown key or empty value in `{line}`"))),
            }
        }
        Ok(conf)
    }

    /// Whether `panic_in` names `entry`.
    pub fn panics_in(&self, entry: &str) -> bool {
        self.panic_in.iter().any(|e| e == entry)
    }
}

fn number_value(key: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{key}: `{value}` is not a non-negative number"))
}

fn flag_value(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(format!("{key}: `{value}` is not 0/1")),
    }
}

/// `path` with `suffix` appended to its file name (`x.so` -> `x.so.conf`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib() -> &'static Path {
        Path::new("/t/libomptarget.rtl.test.so")
    }

    #[test]
    fn defaults() {
        let conf = Conf::parse("", lib()).unwrap();
        assert_eq!(conf, Conf::defaults(lib()));
        assert_eq!(conf.devices, 2);
        assert_eq!(conf.log, Path::new("/t/libomptarget.rtl.test.so.log"));
    }

    #[test]
    fn every_key() {
        let text = "# a comment\n\n devices = 5 \nfail_init_device=1\nfail_init_device=3 # trailing\n\
                    fail_init_plugin=1\ndeinit_in_use=1\nalloc_limit_bytes=4096\nlog=/x/y.log\npanic_in=data_submit\nclaimed_devices=1073741824\n\
                    location=rank 3 on n7\nfail_location=2\nincompatible_device=1\nincompatible_device=4\n";
        let conf = Conf::parse(text, lib()).unwrap();
        assert_eq!(
            conf,
            Conf {
                devices: 5,
                claimed_devices: Some(1 << 30),
                fail_init_device: vec![1, 3],
                fail_init_plugin: true,
                deinit_in_use: true,
                alloc_limit_bytes: Some(4096),
                log: PathBuf::from("/x/y.log"),
                panic_in: vec!["data_submit".into()],
                location: Some("rank 3 on n7".into()),
                fail_location: 2,
                incompatible_device: vec![1, 4],
            }
        );
    }

    #[test]
    fn bad_lines_are_errors_with_their_line_number() {
        for (text, needle) in [
            ("devices=two", "line 1: devices"),
            ("\nfail_init_device=-1", "line 2: fail_init_device"),
            ("fail_init_plugin=yes", "not 0/1"),
            ("colour=blue", "unknown key"),
            ("devices", "not key=value"),
            ("log=", "empty value"),
            ("panic_in=number_of_devices", "panic_in"),
        ] {
            let err = Conf::parse(text, lib()).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
