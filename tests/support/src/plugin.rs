//! Copies of the staged plugins. A copy in its own directory gets its own
//! instance (and state) when dlopened. The test plugin's copy comes with
//! its conf (`<so>.conf`, `key=value` lines: devices, fail_init_device,
//! fail_init_plugin, alloc_limit_bytes, log, ...) and a call log, one line
//! per entry call ([`CallLog`]).

use crate::scratch::Scratch;
use crate::stage::staged;
use std::fmt;
use std::path::{Path, PathBuf};

const TEST_PLUGIN: &str = "libomptarget.rtl.test.so";

/// A private copy of a staged plugin library, removed with its directory.
pub struct PluginCopy {
    /// The copy.
    pub path: PathBuf,
    _dir: Scratch,
}

fn copy_plugin(source: &Path) -> PluginCopy {
    assert!(source.is_file(), "{} was not staged", source.display());
    let dir = Scratch::new("plugin");
    let path = dir.join(&source.file_name().expect("a file name").to_string_lossy());
    std::fs::copy(source, &path).expect("copying the plugin");
    PluginCopy { path, _dir: dir }
}

/// A private copy of the staged host plugin (`libomptarget.rtl.x86_64.so`).
pub fn host_plugin() -> PluginCopy {
    copy_plugin(&staged().lib_dir.join("libomptarget.rtl.x86_64.so"))
}

/// A private copy of the test plugin that lacks required entries.
pub fn incomplete_plugin() -> PluginCopy {
    copy_plugin(
        &staged()
            .test_plugin_dir
            .join("libomptarget.rtl.incomplete.so"),
    )
}

/// A private copy of the test plugin with its conf and call log.
pub struct TestPlugin {
    /// The copied library (what `OMPTARGET_PLUGINS` names).
    pub path: PathBuf,
    /// Its call log: the conf's `log=` if it has one, else `calls.log`
    /// beside the copy.
    pub log_path: PathBuf,
    /// The directory, when the plugin owns it ([`TestPlugin::isolated`]).
    _dir: Option<Scratch>,
}

impl TestPlugin {
    /// Copy the staged test plugin into `scratch/<dir>/` and write its conf
    /// (`conf` lines, `key=value`).
    pub fn new(scratch: &Scratch, dir: &str, conf: &[&str]) -> Self {
        Self::write(scratch.join(dir), conf.iter().copied(), None)
    }

    /// Copy the staged test plugin into a directory of its own (removed
    /// with it) and write its conf (`conf`: `key=value` lines).
    pub fn isolated(conf: &str) -> Self {
        let dir = Scratch::new("test-plugin");
        Self::write(dir.path().to_owned(), conf.lines(), Some(dir))
    }

    fn write<'a>(
        folder: PathBuf,
        conf: impl Iterator<Item = &'a str> + Clone,
        owned: Option<Scratch>,
    ) -> Self {
        std::fs::create_dir_all(&folder).expect("creating the plugin dir");
        let path = folder.join(TEST_PLUGIN);
        std::fs::copy(staged().test_plugin_dir.join(TEST_PLUGIN), &path)
            .expect("copying the test plugin");
        let given_log = conf
            .clone()
            .find_map(|l| l.trim().strip_prefix("log="))
            .map(PathBuf::from);
        let mut text = String::new();
        let log_path = given_log.unwrap_or_else(|| {
            let log = folder.join("calls.log");
            text.push_str(&format!("log={}\n", log.display()));
            log
        });
        for line in conf {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(folder.join(format!("{TEST_PLUGIN}.conf")), text)
            .expect("writing the plugin conf");
        TestPlugin {
            path,
            log_path,
            _dir: owned,
        }
    }

    /// The call log so far (empty if the plugin never wrote one).
    pub fn log(&self) -> CallLog {
        CallLog {
            lines: std::fs::read_to_string(&self.log_path)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The call log's lines.
    pub fn log_lines(&self) -> Vec<String> {
        self.log().lines
    }

    /// The entry names (first token) of the call log's lines.
    pub fn log_calls(&self) -> Vec<String> {
        self.log().entries()
    }
}

/// The test plugin's call log: one line per entry call.
#[derive(Clone)]
pub struct CallLog {
    pub lines: Vec<String>,
}

impl fmt::Display for CallLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.lines.iter().enumerate() {
            writeln!(f, "{i:4}: {line}")?;
        }
        Ok(())
    }
}

/// The entry name of a log line (its first token).
pub fn entry(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// Index of the first entry name `call` in `calls`.
pub fn first(calls: &[String], call: &str) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no {call} in the log: {calls:?}"))
}

/// Index of the last entry name `call` in `calls`.
pub fn last(calls: &[String], call: &str) -> usize {
    calls
        .iter()
        .rposition(|c| c == call)
        .unwrap_or_else(|| panic!("no {call} in the log: {calls:?}"))
}

impl CallLog {
    /// The entry names of the (non-empty) lines, in order.
    pub fn entries(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    }

    /// Indices of the lines whose entry is `name`.
    pub fn positions(&self, name: &str) -> Vec<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| entry(l) == name)
            .map(|(i, _)| i)
            .collect()
    }

    /// How many lines call `name`.
    pub fn count(&self, name: &str) -> usize {
        self.positions(name).len()
    }

    /// The lines whose entry starts with `prefix` (`run_target` matches the
    /// sync, async and team variants).
    pub fn calls_starting(&self, prefix: &str) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| entry(l).starts_with(prefix))
            .map(String::as_str)
            .collect()
    }

    /// Split the log after each `fini` line: one segment per loaded
    /// instance of the plugin (a trailing segment without `fini` is kept).
    pub fn instances(&self) -> Vec<CallLog> {
        let mut out = Vec::new();
        let mut current = Vec::new();
        for line in &self.lines {
            current.push(line.clone());
            if entry(line) == "fini" {
                out.push(CallLog {
                    lines: std::mem::take(&mut current),
                });
            }
        }
        if !current.is_empty() {
            out.push(CallLog { lines: current });
        }
        out
    }

    /// The plugin's memory contract held: every `data_delete` frees a
    /// pointer that a `data_alloc` of the same device returned and that was
    /// not freed since, and nothing allocated is still live at the end.
    pub fn assert_every_alloc_freed_once(&self) {
        let mut live: Vec<(String, String)> = Vec::new();
        for line in &self.lines {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.first().copied() {
                Some("data_alloc") => {
                    assert_eq!(fields.len(), 5, "malformed line {line:?}\n{self}");
                    if fields[4] != "null" {
                        live.push((fields[1].to_owned(), fields[4].to_owned()));
                    }
                }
                Some("data_delete") => {
                    assert_eq!(fields.len(), 3, "malformed line {line:?}\n{self}");
                    let key = (fields[1].to_owned(), fields[2].to_owned());
                    let Some(at) = live.iter().position(|k| *k == key) else {
                        panic!("{line:?} frees a pointer not allocated on that device\n{self}");
                    };
                    live.swap_remove(at);
                }
                _ => {}
            }
        }
        assert!(
            live.is_empty(),
            "allocations never returned to the plugin: {live:?}\n{self}"
        );
    }
}
