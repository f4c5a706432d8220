//! The runtime's own debug subscriber: one line per event on stderr, with no
//! thread-locals anywhere.
//!
//! Why not `tracing_subscriber::fmt`: it formats each event in a
//! thread-local buffer. The C shim shuts the runtime down from the
//! executable's `.fini_array`, after glibc ran the main thread's
//! thread-local destructors, so the first event of that teardown found the
//! buffer destroyed and panicked half way through the shutdown. This
//! subscriber formats into a `String` on the stack and writes it with one
//! `write_all`, so it works at any point of the process's life, and lines
//! of concurrent threads do not interleave.
//!
//! It is span-less: the runtime emits events only, so spans are disabled
//! ([`LineSubscriber::enabled`] says no to them) and [`LineSubscriber::new_span`]
//! hands out one fixed id should a caller create one anyway.
use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that renders every enabled event as one line
/// (`omptarget LEVEL message field=value ...`) and hands it to `write`.
pub(crate) struct LineSubscriber<W> {
    max: LevelFilter,
    write: W,
}

impl<W: Fn(&str) + Send + Sync + 'static> LineSubscriber<W> {
    /// Events at `max` and more severe go to `write`, one complete line
    /// (ending in `\n`) per call.
    pub(crate) fn new(max: LevelFilter, write: W) -> Self {
        LineSubscriber { max, write }
    }
}

/// Write one rendered line to stderr in one call (stderr is unbuffered, so
/// it lands between the program's own `fprintf(stderr, ...)` lines).
pub(crate) fn write_to_stderr(line: &str) {
    use std::io::Write;
    // Nowhere to report a failed write of a debug line.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The one id every span gets (spans are never enabled; see the module doc).
const THE_SPAN: u64 = 1;

impl<W: Fn(&str) + Send + Sync + 'static> Subscriber for LineSubscriber<W> {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(THE_SPAN)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        (self.write)(&render(event));
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// `omptarget LEVEL message field=value ...\n`. Field values are printed
/// as recorded: `%x` fields by `Display`, `?x` fields and strings by `Debug`
/// (so strings come out quoted).
fn render(event: &Event<'_>) -> String {
    let mut visitor = LineVisitor::default();
    event.record(&mut visitor);
    // A message ending in a newline (a report) gets no empty line after it.
    let mut line = format!(
        "omptarget {:>5} {}",
        event.metadata().level(),
        visitor.message.trim_end_matches('\n')
    );
    line.push_str(&visitor.fields);
    line.push('\n');
    line
}

/// Collects the `message` field and the other fields of one event.
#[derive(Default)]
struct LineVisitor {
    message: String,
    /// ` name=value` for each field but `message`.
    fields: String,
}

impl Visit for LineVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // Writing to a String cannot fail.
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Run `f` with a `LineSubscriber` of level `max` as this thread's
    /// default; the lines it wrote.
    fn lines_of(max: LevelFilter, f: impl FnOnce()) -> Vec<String> {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let subscriber = LineSubscriber::new(max, move |line: &str| {
            sink.lock().unwrap().push(line.to_owned())
        });
        tracing::subscriber::with_default(subscriber, f);
        let lines = lines.lock().unwrap().clone();
        lines
    }

    #[test]
    fn an_event_is_one_line_with_its_level_message_and_fields() {
        let plugin = std::path::Path::new("libomptarget.rtl.test.so");
        let lines = lines_of(LevelFilter::DEBUG, || {
            tracing::debug!(plugin = %plugin.display(), device = 3, ptr = ?0x10usize, "device initialised");
            tracing::warn!(what = "a string", "skipping plugin: {}", "no devices");
        });
        assert_eq!(
            lines,
            [
                "omptarget DEBUG device initialised plugin=libomptarget.rtl.test.so device=3 ptr=16\n",
                "omptarget  WARN skipping plugin: no devices what=\"a string\"\n",
            ]
        );
    }

    #[test]
    fn the_level_limits_what_is_written() {
        let emit = || {
            tracing::trace!("t");
            tracing::debug!("d");
            tracing::error!("e");
        };
        let debug = lines_of(LevelFilter::DEBUG, emit);
        assert_eq!(debug, ["omptarget DEBUG d\n", "omptarget ERROR e\n"]);
        let trace = lines_of(LevelFilter::TRACE, emit);
        assert_eq!(trace.len(), 3, "{trace:?}");
        assert_eq!(trace[0], "omptarget TRACE t\n");
    }

    #[test]
    fn spans_are_disabled_and_events_inside_them_still_print() {
        let lines = lines_of(LevelFilter::TRACE, || {
            let span = tracing::debug_span!("region", device = 1);
            assert!(span.is_disabled());
            let _entered = span.enter();
            tracing::debug!("inside");
        });
        assert_eq!(lines, ["omptarget DEBUG inside\n"]);
    }

    #[test]
    fn a_multi_line_message_is_written_in_one_call() {
        let lines = lines_of(LevelFilter::DEBUG, || {
            tracing::debug!("shutdown complete:\n  1. step\n  2. step\n");
        });
        assert_eq!(
            lines,
            ["omptarget DEBUG shutdown complete:\n  1. step\n  2. step\n"]
        );
    }
}
