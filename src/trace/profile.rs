//! `LIBOMPTARGET_PROFILE=file.json`: a Chrome trace event file (what
//! Perfetto and chrome://tracing open), as LLVM's variable asks for.
//!
//! Each operation of interest opens a [`Span`] ([`span`]); when it ends,
//! one complete event (`"ph": "X"`) with its start, duration, thread and
//! arguments is appended to the recording. Spans of one thread nest by
//! time, so a launch shows the plugin call beneath it. The file is written
//! once, by the runtime that started the recording, at the end of its
//! shutdown (the C shim's shutdown at exit included).
//!
//! Why not `tracing` spans with `tracing-chrome`: that layer keeps a
//! thread-local with a destructor and a writer thread, and this project has
//! no global destructors and writes the file during the shutdown at
//! process exit, after the C runtime destroyed the thread-locals. Why not
//! a `tracing` layer of our own: one process has one global subscriber,
//! which the host program or `LIBOMPTARGET_DEBUG` may already own.
//!
//! Off, a span costs one relaxed atomic load and allocates nothing; the
//! callers pass only `'static` names and numbers, so nothing is formatted
//! either. On, events go into one buffer under a mutex (owned by this
//! module, taken by the runtime that writes the file). The JSON is written
//! by `serde_json`, the well-kept crate for the format.
use crate::sync::lock;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// True while a runtime records a profile.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// The events so far; `None` when no recording is open.
static RECORDING: Mutex<Option<Vec<Event>>> = Mutex::new(None);
/// Time zero of the trace (the first recording of the process).
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// What kind of operation a span is: the event's `cat` in the trace, and
/// the rows of `omptarget profile`'s table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Registering or unregistering an offload binary, loading its images.
    Registration,
    /// Mapping data (`target data`, `target enter/exit data`, `target update`).
    Mapping,
    /// Host to device copy.
    TransferToDevice,
    /// Device to host copy.
    TransferFromDevice,
    /// Device to device copy.
    TransferDeviceToDevice,
    /// A kernel launch.
    Launch,
    /// A device allocation.
    Alloc,
    /// A device free.
    Free,
    /// A teardown step.
    Teardown,
    /// The plugin call beneath an operation.
    #[default]
    Plugin,
}

impl Kind {
    /// The event category in the trace file.
    pub fn category(self) -> &'static str {
        match self {
            Kind::Registration => "registration",
            Kind::Mapping => "mapping",
            Kind::TransferToDevice => "transfer_h2d",
            Kind::TransferFromDevice => "transfer_d2h",
            Kind::TransferDeviceToDevice => "transfer_d2d",
            Kind::Launch => "launch",
            Kind::Alloc => "alloc",
            Kind::Free => "free",
            Kind::Teardown => "teardown",
            Kind::Plugin => "plugin",
        }
    }
}

/// One complete event.
#[derive(Default)]
struct Event {
    kind: Kind,
    name: &'static str,
    detail: Option<Box<str>>,
    start_ns: u64,
    dur_ns: u64,
    tid: i64,
    device: Option<usize>,
    bytes: Option<u64>,
}

/// An open span; the event is recorded when it is dropped. `None` (from
/// [`span`]) when no profile is being recorded. One pointer: what the hot
/// paths carry when profiling is off is a null `Option<Span>`.
#[must_use = "the span ends when dropped"]
pub struct Span(Box<Open>);

/// The event being timed.
struct Open {
    event: Event,
    start: Instant,
}

/// Open a span of `kind` named `name` (an entry or operation name), if a
/// profile is being recorded. One relaxed load when not.
#[inline]
pub fn span(kind: Kind, name: &'static str) -> Option<Span> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    Some(open(kind, name))
}

#[cold]
fn open(kind: Kind, name: &'static str) -> Span {
    let start = Instant::now();
    let epoch = *EPOCH.get_or_init(|| start);
    Span(Box::new(Open {
        event: Event {
            kind,
            name,
            detail: None,
            start_ns: start.duration_since(epoch).as_nanos() as u64,
            dur_ns: 0,
            // SAFETY: gettid has no preconditions.
            tid: i64::from(unsafe { libc::gettid() }),
            device: None,
            bytes: None,
        },
        start,
    }))
}

impl Span {
    /// The device the operation is on.
    pub fn device(mut self, device: usize) -> Self {
        self.0.event.device = Some(device);
        self
    }

    /// The bytes it moves or allocates.
    pub fn bytes(mut self, bytes: usize) -> Self {
        self.0.event.bytes = Some(bytes as u64);
        self
    }

    /// Set the bytes once they are known (a free learns its size late).
    pub fn set_bytes(&mut self, bytes: usize) {
        self.0.event.bytes = Some(bytes as u64);
    }

    /// A detail only known at run time (a kernel's name).
    pub fn detail(mut self, detail: &str) -> Self {
        self.0.event.detail = Some(detail.into());
        self
    }
}

/// The dynamic symbol at `addr` (a host-plugin kernel's name), if any.
pub(crate) fn symbol_name(addr: *const std::ffi::c_void) -> Option<String> {
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is only compared against the loaded objects' ranges.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_sname.is_null() {
        return None;
    }
    // SAFETY: dladdr set `dli_sname` to a NUL-terminated symbol name.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) };
    Some(name.to_string_lossy().into_owned())
}

impl Drop for Span {
    fn drop(&mut self) {
        self.0.event.dur_ns = self.0.start.elapsed().as_nanos() as u64;
        if let Some(events) = lock(&RECORDING).as_mut() {
            events.push(std::mem::take(&mut self.0.event));
        }
    }
}

/// Start recording. False if a recording is already open (another
/// runtime's): then this runtime neither records nor writes.
pub(crate) fn start() -> bool {
    let mut recording = lock(&RECORDING);
    if recording.is_some() {
        return false;
    }
    EPOCH.get_or_init(Instant::now);
    *recording = Some(Vec::new());
    ENABLED.store(true, Ordering::Relaxed);
    true
}

/// Stop recording and drop what was recorded (the runtime that started it
/// failed to build).
pub(crate) fn discard() {
    ENABLED.store(false, Ordering::Relaxed);
    lock(&RECORDING).take();
}

/// Stop recording and write the trace to `path`: the number of events,
/// or `None` (and no file touched) when no recording was open, e.g. the
/// partial teardown at exit already wrote it.
pub(crate) fn finish(path: &Path) -> std::io::Result<Option<usize>> {
    ENABLED.store(false, Ordering::Relaxed);
    let Some(events) = lock(&RECORDING).take() else {
        return Ok(None);
    };
    let count = events.len();
    let json = to_chrome_json(events);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    serde_json::to_writer(&mut file, &json)?;
    file.flush()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    Ok(Some(count))
}

fn to_chrome_json(mut events: Vec<Event>) -> serde_json::Value {
    // Parents before their children: by thread, start, longest first.
    events.sort_by(|a, b| {
        (a.tid, a.start_ns, std::cmp::Reverse(a.dur_ns)).cmp(&(
            b.tid,
            b.start_ns,
            std::cmp::Reverse(b.dur_ns),
        ))
    });
    let pid = std::process::id();
    let trace: Vec<serde_json::Value> = events
        .into_iter()
        .map(|e| {
            let mut args = serde_json::Map::new();
            if let Some(device) = e.device {
                args.insert("device".into(), device.into());
            }
            if let Some(bytes) = e.bytes {
                args.insert("bytes".into(), bytes.into());
            }
            if let Some(detail) = &e.detail {
                args.insert("detail".into(), detail.to_string().into());
            }
            let name = match &e.detail {
                Some(detail) => format!("{} {detail}", e.name),
                None => e.name.to_owned(),
            };
            serde_json::json!({
                "name": name,
                "cat": e.kind.category(),
                "ph": "X",
                // Microseconds, as the format wants; fractions keep the ns.
                "ts": e.start_ns as f64 / 1000.0,
                "dur": e.dur_ns as f64 / 1000.0,
                "pid": pid,
                "tid": e.tid,
                "args": args,
            })
        })
        .collect();
    serde_json::json!({
        "traceEvents": trace,
        "displayTimeUnit": "ns",
        "otherData": { "producer": "omptarget-rs" },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_that_is_off_is_one_null_pointer() {
        assert_eq!(
            std::mem::size_of::<Option<Span>>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn off_records_nothing_and_on_nests_by_time() {
        assert!(span(Kind::Launch, "k").is_none() || ENABLED.load(Ordering::Relaxed));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        assert!(start());
        assert!(!start(), "one recording at a time");
        {
            let _outer = span(Kind::Launch, "launch").map(|s| s.device(1).detail("kern"));
            let _inner = span(Kind::Plugin, "run_target_region");
        }
        let _ = span(Kind::TransferToDevice, "data_submit").map(|s| s.bytes(64));
        assert!(finish(&path).unwrap().unwrap() >= 3);
        // Written once: a second finish leaves the file alone.
        assert_eq!(finish(&path).unwrap(), None);
        assert!(span(Kind::Launch, "k").is_none());
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let events = json["traceEvents"].as_array().unwrap();
        let outer = events.iter().find(|e| e["name"] == "launch kern").unwrap();
        let inner = events
            .iter()
            .find(|e| e["name"] == "run_target_region")
            .unwrap();
        let (os, od) = (
            outer["ts"].as_f64().unwrap(),
            outer["dur"].as_f64().unwrap(),
        );
        let is = inner["ts"].as_f64().unwrap();
        assert!(os <= is && is + inner["dur"].as_f64().unwrap() <= os + od);
        assert_eq!(outer["args"]["device"], 1);
        let copy = events.iter().find(|e| e["name"] == "data_submit").unwrap();
        assert_eq!(copy["cat"], "transfer_h2d");
        assert_eq!(copy["args"]["bytes"], 64);
    }
}
